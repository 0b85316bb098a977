package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/internal/jsonscan"
	"github.com/xiaozhi-hub/hub/registry"
)

// maxLimit caps ?limit= on the history endpoints.
const maxLimit = 10_000

var callSpec = bodySpec{
	kinds: fieldKinds{"arguments": "a JSON object", "timeoutMs": "a positive integer (milliseconds)"},
	shape: `{"arguments":{"volume":50},"timeoutMs":10000}`,
}

func (s *Server) callRoutes() []route {
	return []route{
		{"/api/devices/{id}/tools/{tool}/call", []methodHandler{{"POST", s.callTool}}},
		{"/api/devices/{id}/events", []methodHandler{{"GET", s.deviceEvents}}},
		{"/api/calls", []methodHandler{{"GET", s.listCalls}}},
	}
}

// callTool runs a tool on a device: body {"arguments":{…},"timeoutMs":N},
// both optional (an empty body calls the tool with no arguments and the
// default timeout). It answers 200 {"content":…,"isError":bool} with what the
// device returned; isError true is the tool's own failure, reported by the
// device. Hub-side failures are error responses: 422 when the arguments do
// not match the tool's inputSchema (the device is not contacted), 404, 409
// offline, 502 device error or disconnect, 504 timeout.
func (s *Server) callTool(w http.ResponseWriter, r *http.Request) {
	body, timeout, err := readCall(w, r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	res, err := s.reg.CallTool(r.Context(), registry.CallRequest{
		DeviceID:  pathID(r),
		Tool:      r.PathValue("tool"),
		Arguments: body.Arguments,
		Timeout:   timeout,
		Caller:    "api",
	})
	if errors.Is(err, registry.ErrTimeoutRange) {
		most := s.reg.MaxCallTimeout()
		err = hub.Errorf(hub.EINVALID, "timeoutMs must be between 1 and %d (%v, setting max-call-timeout), not %d",
			most.Milliseconds(), most, *body.TimeoutMs)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if len(res.Content) == 0 {
		res.Content = json.RawMessage("[]")
	}
	writeCallResult(w, res)
}

// readCall reads a tool call's body (a device's or a service's) and its
// timeout as the registry takes it (see msTimeout).
func readCall(w http.ResponseWriter, r *http.Request) (callBody, time.Duration, error) {
	var body callBody
	raw, err := readBody(w, r, callSpec.limit)
	if err == nil && !body.decodeFast(raw) {
		err = decodeBytes(raw, &body, callSpec, true)
	}
	var timeout time.Duration
	if body.TimeoutMs != nil {
		timeout = msTimeout(*body.TimeoutMs)
	}
	return body, timeout, err
}

// msTimeout turns a request's timeoutMs into the registry's Timeout, whose
// range the registry judges: 0 ms is a timeout asked for, not "the
// default", so it goes as negative; what Duration cannot hold saturates.
func msTimeout(ms int64) time.Duration {
	switch {
	case ms <= 0:
		return -1
	case ms > math.MaxInt64/int64(time.Millisecond):
		return math.MaxInt64
	}
	return time.Duration(ms) * time.Millisecond
}

// callBody is the body of a tool call.
type callBody struct {
	Arguments json.RawMessage `json:"arguments"`
	TimeoutMs *int64          `json:"timeoutMs"`
}

var callBodyKeys = []string{"arguments", "timeoutMs"}

// decodeFast decodes the common body, a JSON object with only "arguments"
// and an integer (or null) "timeoutMs", as decodeBytes would, without
// encoding/json's decoder. It reports false for every other body, which
// decodeBytes then decodes or explains. Arguments share memory with b.
func (c *callBody) decodeFast(b []byte) bool {
	var vals [2][]byte
	if !jsonscan.OnlyObjectMembers(b, callBodyKeys, vals[:]) {
		return false
	}
	if t := vals[1]; t != nil && string(t) != "null" {
		n, ok := plainInt(t)
		if !ok {
			return false
		}
		c.TimeoutMs = &n
	}
	c.Arguments = vals[0]
	return true
}

// plainInt parses a JSON number written as an integer that fits int64.
func plainInt(b []byte) (int64, bool) {
	digits := b
	if len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 18 {
		return 0, false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(string(b), 10, 64)
	return n, err == nil
}

// writeCallResult is writeJSON(w, 200, res) without reflection: the same
// bytes, {"content":<content compacted>,"isError":<bool>} and a newline.
func writeCallResult(w http.ResponseWriter, res hub.CallResult) {
	var buf bytes.Buffer
	buf.Grow(len(res.Content) + 32)
	buf.WriteString(`{"content":`)
	if json.Compact(&buf, res.Content) != nil {
		writeJSON(w, http.StatusOK, res) // explains itself
		return
	}
	if res.IsError {
		buf.WriteString(`,"isError":true}` + "\n")
	} else {
		buf.WriteString(`,"isError":false}` + "\n")
	}
	h := w.Header()
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(buf.Bytes())
}

// listCalls answers {"calls":[…]}, newest first; ?device= keeps one
// device's calls, ?limit= caps how many.
func (s *Server) listCalls(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit, err := parseLimit(q.Get("limit"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	p := principal(r)
	f := hub.CallFilter{DeviceID: hub.NormalizeDeviceID(q.Get("device")), Limit: limit, Seen: s.seenCalls(p)}
	if f.DeviceID != "" {
		if err := s.seenTarget(p, f.DeviceID); err != nil {
			s.fail(w, r, err)
			return
		}
	}
	calls, err := s.reg.Calls(r.Context(), f)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if calls == nil {
		calls = []hub.CallRecord{}
	}
	writeJSON(w, http.StatusOK, struct {
		Calls []hub.CallRecord `json:"calls"`
	}{calls})
}

// deviceEvents answers {"events":[…]}: the recorded events of one device,
// newest first.
func (s *Server) deviceEvents(w http.ResponseWriter, r *http.Request) {
	id := pathID(r)
	limit, err := parseLimit(r.URL.Query().Get("limit"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if _, err := s.seenDevice(r, "", ""); err != nil {
		s.fail(w, r, err)
		return
	}
	events, err := s.reg.Events(r.Context(), id, limit)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if events == nil {
		events = []hub.Event{}
	}
	writeJSON(w, http.StatusOK, struct {
		Events []hub.Event `json:"events"`
	}{events})
}

// seenCalls is the part of the call history p sees (nil: all of it), by
// Principal.SeesCall: of each device p sees, every call or only p's own.
func (s *Server) seenCalls(p *hub.Principal) *hub.SeenCalls {
	if p.Admin {
		return nil
	}
	v := &hub.SeenCalls{All: []string{}, Own: []string{}, User: p.User}
	for _, d := range s.reg.DevicesOf(p) {
		switch {
		case p.SeesCall(d.Home, hub.CallRecord{}):
			v.All = append(v.All, d.ID)
		case p.SeesCall(d.Home, hub.CallRecord{User: p.User}):
			v.Own = append(v.Own, d.ID)
		}
	}
	// Of the services p sees, its own calls: a service's id is one a
	// device could take too, so nobody is shown others' calls under it.
	if s.services != nil {
		for _, sv := range s.services.Services(p) {
			v.Own = append(v.Own, hub.ServicePrefix+sv.Name)
		}
	}
	return v
}

// seenTarget checks that p sees the device, or the service ("service:"
// and its name, as its calls are recorded), whose calls it asks for.
func (s *Server) seenTarget(p *hub.Principal, id string) error {
	if name, ok := strings.CutPrefix(id, hub.ServicePrefix); ok && s.services != nil {
		_, err := s.services.Service(p, name)
		return err
	}
	_, err := s.reg.DeviceAs(p, id)
	return err
}

// parseLimit reads ?limit=; empty means 0, the store's default.
func parseLimit(v string) (int, error) {
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > maxLimit {
		return 0, hub.Errorf(hub.EBADREQUEST, "limit must be a whole number from 1 to %d, not %q", maxLimit, v)
	}
	return n, nil
}
