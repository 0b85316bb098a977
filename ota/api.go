package ota

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/xiaozhi-hub/hub"
)

// apiList answers GET /api/activations: {"activations":[…]}.
func (s *Service) apiList(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"activations": s.Pending(), "policy": s.opts.Policy})
}

// apiApprove answers POST /api/activations/{code}/approve with an optional
// body {"name":"…","room":"…"} that labels the device.
func (s *Service) apiApprove(w http.ResponseWriter, r *http.Request) {
	raw, err := readBody(w, r, 4<<10)
	if err != nil {
		s.refuse(w, r, err)
		return
	}
	var body struct {
		Name *string `json:"name"`
		Room *string `json:"room"`
	}
	if len(raw) > 0 {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&body); err != nil {
			s.refuse(w, r, hub.Errorf(hub.EBADREQUEST, `the body must be empty or {"name":"…","room":"…"}: %v`, err))
			return
		}
	}
	a, t, err := s.Approve(r.Context(), r.PathValue("code"), hub.DevicePatch{Name: body.Name, Room: body.Room})
	if err != nil {
		s.refuse(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"activation": a, "trust": t})
}

// apiTrust answers GET /api/devices/{id}/trust.
func (s *Service) apiTrust(w http.ResponseWriter, r *http.Request) {
	t, err := s.TrustOf(r.Context(), hub.NormalizeDeviceID(r.PathValue("id")))
	if err != nil {
		s.refuse(w, r, err)
		return
	}
	s.mu.RLock()
	trusted := s.trustedLocked(t.DeviceID)
	s.mu.RUnlock()
	writeJSON(w, http.StatusOK, struct {
		Trust
		Admitted bool `json:"admitted"`
	}{t, trusted})
}

// apiRevoke answers DELETE /api/devices/{id}/token and
// POST /api/devices/{id}/token/revoke.
func (s *Service) apiRevoke(w http.ResponseWriter, r *http.Request) {
	t, err := s.Revoke(r.Context(), hub.NormalizeDeviceID(r.PathValue("id")))
	if err != nil {
		s.refuse(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"deviceId": t.DeviceID, "revoked": t.Revoked})
}

// apiRebind answers POST /api/devices/{id}/rebind with an optional body
// {"clientId":"…","serialNumber":"…"}: the identity the device is bound to
// from now on (empty: whatever its next check or connection presents).
func (s *Service) apiRebind(w http.ResponseWriter, r *http.Request) {
	raw, err := readBody(w, r, 4<<10)
	if err != nil {
		s.refuse(w, r, err)
		return
	}
	var body struct {
		ClientID     string `json:"clientId"`
		SerialNumber string `json:"serialNumber"`
	}
	if len(raw) > 0 {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&body); err != nil || len(body.ClientID) > 128 {
			s.refuse(w, r, hub.Errorf(hub.EBADREQUEST, `the body must be empty or {"clientId":"…","serialNumber":"…"} (clientId up to 128 characters)`))
			return
		}
	}
	t, err := s.Rebind(r.Context(), hub.NormalizeDeviceID(r.PathValue("id")), body.ClientID, cleanSerial(body.SerialNumber))
	if err != nil {
		s.refuse(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"deviceId": t.DeviceID, "clientId": t.ClientID, "serialNumber": t.SerialNumber})
}
