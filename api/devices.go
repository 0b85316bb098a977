package api

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/xiaozhi-hub/hub"
)

func (s *Server) deviceRoutes() []route {
	return []route{
		{"/api/devices", []methodHandler{{"GET", s.listDevices}}},
		{"/api/devices/{id}", []methodHandler{{"GET", s.getDevice}, {"PATCH", s.patchDevice}, {"DELETE", s.deleteDevice}}},
		{"/api/devices/{id}/tools", []methodHandler{{"GET", s.listTools}}},
		{"/api/devices/{id}/iot", []methodHandler{{"GET", s.listThings}}},
		{"/api/devices/{id}/iot/commands", []methodHandler{{"POST", s.sendCommands}}},
	}
}

// listDevices answers {"devices":[…]}, sorted by room, name and id.
// ?online=true|false keeps devices by connection state; ?room= keeps those in
// a room (case-insensitive; an empty value selects devices with no room).
func (s *Server) listDevices(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var online *bool
	if v := q.Get("online"); q.Has("online") {
		b, err := parseBool("online", v)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		online = &b
	}
	room, byRoom := strings.TrimSpace(q.Get("room")), q.Has("room")

	all := s.reg.DevicesOf(principal(r))
	out := make([]hub.Device, 0, len(all))
	for _, d := range all {
		if online != nil && d.Online != *online {
			continue
		}
		if byRoom && !strings.EqualFold(d.Room, room) {
			continue
		}
		out = append(out, d)
	}
	writeJSON(w, http.StatusOK, struct {
		Devices []hub.Device `json:"devices"`
	}{out})
}

func (s *Server) getDevice(w http.ResponseWriter, r *http.Request) {
	d, err := s.seenDevice(r, "", "")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, d)
}

var patchSpec = bodySpec{
	kinds: fieldKinds{"name": "a string", "room": "a string", "aliases": "an array of strings", "voice": "a string"},
	shape: `{"name":"Desk lamp","room":"Study","aliases":["lamp"],"voice":"nova"}`,
}

// patchDevice applies {"name","room","aliases"}; absent or null fields are
// left alone. It answers the updated device. Guests may not (403).
func (s *Server) patchDevice(w http.ResponseWriter, r *http.Request) {
	var p hub.DevicePatch
	if err := decodeBody(w, r, &p, patchSpec, false); err != nil {
		s.fail(w, r, err)
		return
	}
	d, err := s.seenDevice(r, hub.RoleMember, "change a device")
	if err == nil {
		d, err = s.reg.UpdateDevice(r.Context(), d.ID, p)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, d)
}

// deleteDevice forgets a device with its history (owners of its home).
func (s *Server) deleteDevice(w http.ResponseWriter, r *http.Request) {
	d, err := s.seenDevice(r, hub.RoleOwner, "forget a device")
	if err == nil {
		err = s.reg.DeleteDevice(r.Context(), d.ID)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// listTools answers {"tools":[…],"stale":bool}. stale means the device
// reconnected and its list is being fetched again. ?audience=agent leaves
// out user-only tools (reboot, upgrade, …), as an AI agent would see them.
func (s *Server) listTools(w http.ResponseWriter, r *http.Request) {
	audience := r.URL.Query().Get("audience")
	if audience != "" && audience != "agent" && audience != "user" {
		s.fail(w, r, hub.Errorf(hub.EBADREQUEST, "audience must be \"agent\" or \"user\", not %q", audience))
		return
	}
	d, err := s.seenDevice(r, "", "")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	tools, stale, err := s.reg.Tools(d.ID)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := make([]hub.Tool, 0, len(tools))
	for _, t := range tools {
		if audience == "agent" && t.UserOnly {
			continue
		}
		out = append(out, t)
	}
	writeJSON(w, http.StatusOK, struct {
		Tools []hub.Tool `json:"tools"`
		Stale bool       `json:"stale"`
	}{out, stale})
}

// listThings answers {"things":[…]}: the legacy IoT things of a device with
// their last reported state.
func (s *Server) listThings(w http.ResponseWriter, r *http.Request) {
	d, err := s.seenDevice(r, "", "")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	things, err := s.reg.Things(d.ID)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if things == nil {
		things = []hub.Thing{}
	}
	writeJSON(w, http.StatusOK, struct {
		Things []hub.Thing `json:"things"`
	}{things})
}

var commandsSpec = bodySpec{
	kinds: fieldKinds{"commands": "an array of commands"},
	shape: `{"commands":[{"name":"Lamp","method":"TurnOn","parameters":{}}]}`,
}

// sendCommands sends legacy IoT commands and answers 202: legacy devices
// never acknowledge them, so success means only that they were sent.
func (s *Server) sendCommands(w http.ResponseWriter, r *http.Request) {
	id := pathID(r)
	var body struct {
		Commands []hub.IoTCommand `json:"commands"`
	}
	if err := decodeBody(w, r, &body, commandsSpec, false); err != nil {
		s.fail(w, r, err)
		return
	}
	if len(body.Commands) == 0 {
		s.fail(w, r, hub.Errorf(hub.EINVALID, "commands is empty: send at least one, as in %s", commandsSpec.shape))
		return
	}
	if err := s.reg.SendIoTCommands(r.Context(), id, body.Commands, "api"); err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, struct {
		Sent int    `json:"sent"`
		Note string `json:"note"`
	}{
		Sent: len(body.Commands),
		Note: fmt.Sprintf("legacy devices do not acknowledge commands; watch GET /api/devices/%s/iot or /api/events for the new state", url.PathEscape(id)),
	})
}

func parseBool(name, v string) (bool, error) {
	switch strings.ToLower(v) {
	case "true", "1", "yes":
		return true, nil
	case "false", "0", "no":
		return false, nil
	}
	return false, hub.Errorf(hub.EBADREQUEST, "%s must be true or false, not %q", name, v)
}
