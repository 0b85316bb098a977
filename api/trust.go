package api

import (
	"context"
	"net/http"

	"github.com/xiaozhi-hub/hub"
)

// Trust is who may connect as which device: activation codes waiting for
// a person, approvals, tokens and identity bindings (ota.Service). Errors
// are *hub.Error values: ENOTFOUND for an unknown code or device,
// EBADREQUEST for an unusable Client-Id.
type Trust interface {
	// Policy is the device-auth policy in force (activation, token, open).
	Policy() string
	// Pending lists the activation codes waiting for a person.
	Pending() []hub.Activation
	// Approve trusts the device that was given code and labels it.
	Approve(ctx context.Context, code string, patch hub.DevicePatch) (hub.Activation, hub.Trust, error)
	// TrustOf is the device's trust record.
	TrustOf(ctx context.Context, deviceID string) (hub.Trust, error)
	// Admitted reports whether the policy admits the device once it holds
	// a token.
	Admitted(deviceID string) bool
	// Revoke invalidates the device's tokens (and its approval).
	Revoke(ctx context.Context, deviceID string) (hub.Trust, error)
	// Rebind binds the device to another Client-Id and serial ("": the
	// next one it presents).
	Rebind(ctx context.Context, deviceID, clientID, serial string) (hub.Trust, error)
	// SetTransport keeps the device on WebSocket ("websocket") or lets it
	// follow the hub ("auto") from its next OTA check.
	SetTransport(ctx context.Context, deviceID, transport string) (hub.Trust, error)
}

func (s *Server) trustRoutes() []route {
	if s.trust == nil {
		return nil
	}
	return []route{
		{"/api/activations", []methodHandler{{"GET", s.adminOnly("list the activation codes of every device (POST /api/homes/{id}/devices adds a device to your home by its code)", s.listActivations)}}},
		{"/api/activations/{code}/approve", []methodHandler{{"POST", s.adminOnly("approve a device into no home (POST /api/homes/{id}/devices adds a device to your home by its code)", s.approve)}}},
		{"/api/devices/{id}/trust", []methodHandler{{"GET", s.getTrust}}},
		{"/api/devices/{id}/token", []methodHandler{{"DELETE", s.revoke}}},
		{"/api/devices/{id}/token/revoke", []methodHandler{{"POST", s.revoke}}},
		{"/api/devices/{id}/rebind", []methodHandler{{"POST", s.rebind}}},
		{"/api/devices/{id}/transport", []methodHandler{{"PUT", s.setTransport}}},
	}
}

// listActivations answers {"activations":[…],"policy":"…"}: the codes
// waiting for a person, oldest first.
func (s *Server) listActivations(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"activations": s.trust.Pending(), "policy": s.trust.Policy()})
}

var approveSpec = bodySpec{
	kinds: fieldKinds{"name": "a string", "room": "a string"},
	shape: `{"name":"Kitchen speaker","room":"kitchen"}`,
	limit: 4 << 10,
}

// approve answers POST /api/activations/{code}/approve, with an optional
// body {"name":"…","room":"…"} that labels the device:
// {"activation":{…},"trust":{…}}.
func (s *Server) approve(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Name *string `json:"name"`
		Room *string `json:"room"`
	}
	if err := decodeBody(w, r, &body, approveSpec, true); err != nil {
		s.fail(w, r, err)
		return
	}
	a, t, err := s.trust.Approve(r.Context(), r.PathValue("code"), hub.DevicePatch{Name: body.Name, Room: body.Room})
	if err != nil {
		if hub.ErrorCode(err) == hub.ENOTFOUND {
			err = hint(err, "GET /api/activations lists the pending codes")
		}
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"activation": a, "trust": t})
}

// getTrust answers the device's trust record and whether it is admitted.
func (s *Server) getTrust(w http.ResponseWriter, r *http.Request) {
	id := pathID(r)
	if !principal(r).Admin {
		if _, err := s.seenDevice(r, "", ""); err != nil {
			s.fail(w, r, err)
			return
		}
	}
	t, err := s.trust.TrustOf(r.Context(), id)
	if hub.ErrorCode(err) == hub.ENOTFOUND {
		// A device the hub knows that never made an OTA check here (a
		// demo device, or one connected under device-auth open) has the
		// empty record: nothing approved, bound or chosen.
		if _, derr := s.reg.Device(id); derr == nil {
			t, err = hub.Trust{DeviceID: id}, nil
		}
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, struct {
		hub.Trust
		Admitted bool `json:"admitted"`
	}{t, s.trust.Admitted(t.DeviceID)})
}

// revoke answers DELETE /api/devices/{id}/token and
// POST /api/devices/{id}/token/revoke: {"deviceId","revoked"}.
func (s *Server) revoke(w http.ResponseWriter, r *http.Request) {
	if _, err := s.seenDevice(r, hub.RoleOwner, "revoke a device's tokens"); err != nil && !principal(r).Admin {
		s.fail(w, r, err)
		return
	}
	t, err := s.trust.Revoke(r.Context(), pathID(r))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"deviceId": t.DeviceID, "revoked": t.Revoked})
}

var rebindSpec = bodySpec{
	kinds: fieldKinds{"clientId": "a string", "serialNumber": "a string"},
	shape: `{"clientId":"…","serialNumber":"…"}`,
	limit: 4 << 10,
}

// rebind answers POST /api/devices/{id}/rebind with an optional body
// {"clientId":"…","serialNumber":"…"}: the identity the device is bound to
// from now on (empty: whatever its next check or connection presents).
func (s *Server) rebind(w http.ResponseWriter, r *http.Request) {
	var body struct {
		ClientID     string `json:"clientId"`
		SerialNumber string `json:"serialNumber"`
	}
	if err := decodeBody(w, r, &body, rebindSpec, true); err != nil {
		s.fail(w, r, err)
		return
	}
	if _, err := s.seenDevice(r, hub.RoleMember, "re-bind a device"); err != nil && !principal(r).Admin {
		s.fail(w, r, err)
		return
	}
	t, err := s.trust.Rebind(r.Context(), pathID(r), body.ClientID, body.SerialNumber)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"deviceId": t.DeviceID, "clientId": t.ClientID, "serialNumber": t.SerialNumber})
}

var transportSpec = bodySpec{
	kinds: fieldKinds{"transport": "a string"},
	shape: `{"transport":"websocket"}`,
	limit: 1 << 10,
}

// setTransport answers PUT /api/devices/{id}/transport with a body
// {"transport":"websocket"|"auto"}: where the device's next OTA check sends
// it when the hub offers MQTT. Answers {"deviceId","transport"}.
func (s *Server) setTransport(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Transport *string `json:"transport"`
	}
	if err := decodeBody(w, r, &body, transportSpec, false); err != nil {
		s.fail(w, r, err)
		return
	}
	if body.Transport == nil {
		s.fail(w, r, hub.Errorf(hub.EBADREQUEST, `the body needs "transport": "websocket" or "auto"`))
		return
	}
	if _, err := s.seenDevice(r, hub.RoleMember, "choose a device's transport"); err != nil && !principal(r).Admin {
		s.fail(w, r, err)
		return
	}
	t, err := s.trust.SetTransport(r.Context(), pathID(r), *body.Transport)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	transport := t.Transport
	if transport == "" {
		transport = "auto"
	}
	writeJSON(w, http.StatusOK, map[string]any{"deviceId": t.DeviceID, "transport": transport})
}
