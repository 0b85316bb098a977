package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/registry/registrytest"
)

const callVolume = "/api/devices/dev-1/tools/self.audio_speaker.set_volume/call"

func TestCallOfflineDevice(t *testing.T) {
	h := newHub(t, hubOptions{})
	l, conn := h.connect("dev-1", volumeTool)
	l.Disconnect(context.Background(), "conversation ended")

	h.do("POST", callVolume, `{"arguments":{"volume":30}}`).wantError(t, http.StatusConflict, "device_offline", "dev-1", "offline")
	if n := len(conn.Calls()); n != 0 {
		t.Errorf("the offline device's old connection was called %d times", n)
	}
	// The cached tools are still listed while the device is away.
	var tools struct{ Tools []hub.Tool }
	h.do("GET", "/api/devices/dev-1/tools", "").json(t, &tools)
	if len(tools.Tools) != 1 {
		t.Errorf("cached tools of an offline device: %+v", tools.Tools)
	}
}

func TestCallValidatesArgumentsBeforeTheDevice(t *testing.T) {
	h := newHub(t, hubOptions{})
	_, conn := h.connect("dev-1", volumeTool)

	cases := []struct {
		name, body string
		status     int
		code       string
		mentions   []string
	}{
		{"wrong type", `{"arguments":{"volume":"loud"}}`, 422, "invalid_argument", []string{"volume"}},
		{"out of range", `{"arguments":{"volume":101}}`, 422, "invalid_argument", []string{"volume"}},
		{"missing required", `{"arguments":{}}`, 422, "invalid_argument", []string{"volume"}},
		{"no body", ``, 422, "invalid_argument", []string{"volume"}},
		{"arguments not an object", `{"arguments":[50]}`, 422, "invalid_argument", []string{"arguments", "object"}},
		{"arguments a string", `{"arguments":"volume=50"}`, 422, "invalid_argument", []string{"arguments", "object"}},
		{"timeout zero", `{"arguments":{"volume":5},"timeoutMs":0}`, 422, "invalid_argument", []string{"timeoutMs"}},
		{"timeout negative", `{"arguments":{"volume":5},"timeoutMs":-1}`, 422, "invalid_argument", []string{"timeoutMs"}},
		{"timeout too long", `{"arguments":{"volume":5},"timeoutMs":300001}`, 422, "invalid_argument", []string{"timeoutMs", "300000"}},
		{"timeout fractional", `{"arguments":{"volume":5},"timeoutMs":1.5}`, 400, "bad_request", []string{"timeoutMs"}},
		{"timeout a string", `{"arguments":{"volume":5},"timeoutMs":"10s"}`, 400, "bad_request", []string{"timeoutMs"}},
		{"unknown field", `{"args":{"volume":5}}`, 400, "bad_request", []string{`"args"`, "arguments"}},
		{"body not JSON", `volume=5`, 400, "bad_request", []string{"JSON object"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h.do("POST", callVolume, c.body).wantError(t, c.status, c.code, c.mentions...)
		})
	}
	if n := len(conn.Calls()); n != 0 {
		t.Fatalf("the device was called %d times with invalid requests", n)
	}

	h.do("POST", "/api/devices/dev-1/tools/self.nope/call", `{}`).wantError(t, http.StatusNotFound, "not_found", "self.nope")

	// A valid call reaches the device and its answer comes back.
	r := h.do("POST", callVolume, `{"arguments":{"volume":50},"timeoutMs":5000}`)
	if r.status != http.StatusOK {
		t.Fatalf("valid call: status %d: %s", r.status, r.body)
	}
	var res struct {
		Content []struct{ Type, Text string } `json:"content"`
		IsError *bool                         `json:"isError"`
	}
	r.json(t, &res)
	if res.IsError == nil || *res.IsError || len(res.Content) != 1 || res.Content[0].Text != `{"volume":50}` {
		t.Errorf("call answered %s", r.body)
	}
	if n := len(conn.Calls()); n != 1 {
		t.Errorf("device called %d times, want 1", n)
	}
}

func TestCallDeviceFailures(t *testing.T) {
	h := newHub(t, hubOptions{})
	tool := func(name string) hub.Tool {
		return hub.Tool{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`)}
	}
	_, conn := h.connect("dev-1", tool("fails"), tool("hangs"), tool("drops"), tool("tool_error"), tool("breaks"))
	conn.Answer("fails", registrytest.Answer{Err: hub.Errorf(hub.EDEVICE, "the device answered: Missing valid argument: volume")})
	conn.Answer("hangs", registrytest.Answer{Err: hub.Errorf(hub.ETIMEOUT, "the device did not answer within 5s")})
	conn.Answer("drops", registrytest.Answer{Err: hub.Errorf(hub.EGONE, "the device disconnected during the call")})
	conn.Answer("breaks", registrytest.Answer{Err: errString("write tcp 10.0.0.7:443: broken pipe")})
	conn.Answer("tool_error", registrytest.Answer{Result: hub.CallResult{Content: json.RawMessage(`[{"type":"text","text":"camera busy"}]`), IsError: true}})

	call := func(tool string) response {
		return h.do("POST", "/api/devices/dev-1/tools/"+tool+"/call", "")
	}
	call("fails").wantError(t, http.StatusBadGateway, "device_error", "Missing valid argument: volume")
	call("hangs").wantError(t, http.StatusGatewayTimeout, "timeout")
	call("drops").wantError(t, http.StatusBadGateway, "device_disconnected")
	r := call("breaks")
	r.wantError(t, http.StatusInternalServerError, "internal", "internal error")
	if strings.Contains(string(r.body), "10.0.0.7") {
		t.Errorf("an internal error leaked its details: %s", r.body)
	}

	// A tool's own failure is the device's answer, not an HTTP error.
	r = call("tool_error")
	var res struct {
		Content json.RawMessage `json:"content"`
		IsError bool            `json:"isError"`
	}
	r.json(t, &res)
	if r.status != http.StatusOK || !res.IsError || !strings.Contains(string(res.Content), "camera busy") {
		t.Errorf("tool error answered %d %s", r.status, r.body)
	}
}

func TestCallHistory(t *testing.T) {
	h := newHub(t, hubOptions{})
	h.connect("dev-1", volumeTool, statusTool)
	h.connect("dev-2", statusTool)

	for _, p := range []string{callVolume, "/api/devices/dev-2/tools/self.get_device_status/call"} {
		if r := h.do("POST", p, `{"arguments":{"volume":7}}`); r.status != http.StatusOK {
			t.Fatalf("POST %s: %d %s", p, r.status, r.body)
		}
	}
	// Records are written off the call path; wait until both are stored.
	var calls struct {
		Calls []hub.CallRecord `json:"calls"`
	}
	for i := 0; len(calls.Calls) < 2; i++ {
		if i == 1000 {
			t.Fatalf("calls were never recorded: %+v", calls.Calls)
		}
		time.Sleep(5 * time.Millisecond)
		h.do("GET", "/api/calls", "").json(t, &calls)
	}
	for _, c := range calls.Calls {
		if c.Caller != "api" || c.Kind != "mcp" {
			t.Errorf("record %+v, want caller api and kind mcp", c)
		}
	}

	calls.Calls = nil
	r := h.do("GET", "/api/calls?device=dev-1&limit=5", "")
	r.json(t, &calls)
	if r.status != http.StatusOK || len(calls.Calls) != 1 || calls.Calls[0].Tool != volumeTool.Name || calls.Calls[0].Outcome != hub.OutcomeOK {
		t.Errorf("calls of dev-1: %s", r.body)
	}
	calls.Calls = nil
	h.do("GET", "/api/calls?limit=1", "").json(t, &calls)
	if len(calls.Calls) != 1 {
		t.Errorf("limit=1 gave %d calls", len(calls.Calls))
	}
	for _, bad := range []string{"0", "-3", "ten", "1000000"} {
		h.do("GET", "/api/calls?limit="+bad, "").wantError(t, http.StatusBadRequest, "bad_request", "limit")
	}
}

func TestDeviceEvents(t *testing.T) {
	h := newHub(t, hubOptions{})
	h.connect("dev-1")
	h.connect("dev-2")
	if r := h.do("PATCH", "/api/devices/dev-1", `{"name":"Lamp"}`); r.status != http.StatusOK {
		t.Fatalf("PATCH: %d %s", r.status, r.body)
	}
	var events struct {
		Events []hub.Event `json:"events"`
	}
	for i := 0; len(events.Events) < 2; i++ {
		if i == 1000 {
			t.Fatalf("events were never recorded: %+v", events.Events)
		}
		time.Sleep(5 * time.Millisecond)
		h.do("GET", "/api/devices/dev-1/events", "").json(t, &events)
	}
	types := map[string]bool{}
	for _, e := range events.Events {
		if e.DeviceID != "dev-1" {
			t.Errorf("event of another device: %+v", e)
		}
		types[e.Type] = true
	}
	if !types[hub.EventOnline] || !types[hub.EventDeviceUpdated] {
		t.Errorf("events %+v, want online and device_updated", events.Events)
	}
	events.Events = nil
	h.do("GET", "/api/devices/dev-1/events?limit=1", "").json(t, &events)
	if len(events.Events) != 1 {
		t.Errorf("limit=1 gave %+v", events.Events)
	}
	h.do("GET", "/api/devices/dev-1/events?limit=x", "").wantError(t, http.StatusBadRequest, "bad_request", "limit")
}

// TestCallFinishedEventCarriesRecordID: a client watching the event stream
// can find each finished call in GET /api/calls by the event's id.
func TestCallFinishedEventCarriesRecordID(t *testing.T) {
	h := newHub(t, hubOptions{})
	h.connect("dev-1", volumeTool)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	resp, stream := h.openStream(ctx, "?device=dev-1")
	defer resp.Body.Close()

	var fromEvents []int64
	for range 3 {
		if r := h.do("POST", callVolume, `{"arguments":{"volume":7}}`); r.status != http.StatusOK {
			t.Fatalf("POST: %d %s", r.status, r.body)
		}
		for {
			ev, err := stream.next()
			if err != nil {
				t.Fatalf("reading the stream: %v", err)
			}
			if ev.event != hub.EventCallFinished {
				continue
			}
			var got struct{ Data hub.CallRecord }
			if err := json.Unmarshal([]byte(ev.data), &got); err != nil {
				t.Fatalf("event data: %v: %s", err, ev.data)
			}
			fromEvents = append(fromEvents, got.Data.ID)
			break
		}
	}
	var calls struct {
		Calls []hub.CallRecord `json:"calls"`
	}
	for i := 0; len(calls.Calls) < 3; i++ {
		if i == 1000 {
			t.Fatalf("calls were never recorded: %+v", calls.Calls)
		}
		time.Sleep(5 * time.Millisecond)
		h.do("GET", "/api/calls", "").json(t, &calls)
	}
	var stored []int64
	for _, c := range calls.Calls { // newest first
		stored = append([]int64{c.ID}, stored...)
	}
	if fmt.Sprint(fromEvents) != fmt.Sprint(stored) || fromEvents[0] == 0 {
		t.Errorf("call_finished events carry ids %v, GET /api/calls has %v", fromEvents, stored)
	}
}
