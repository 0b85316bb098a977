package server_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/xiaozhi-hub/hub/sim"
)

// Firmware 2.4.2 inserts error messages into its reply without escaping
// them: a quote makes the frame invalid JSON. The call must fail at once
// with the device's text, not wait for its whole timeout.
func TestUnescapedDeviceErrorFailsTheCallAtOnce(t *testing.T) {
	h := startHub(t, "", nil)
	check := bystander(t, h)
	d := h.device(sim.Config{DeviceID: "aa:00:00:00:0f:01", Faults: sim.Faults{UnescapedErrors: true}},
		sim.FailingTool("self.test.mode", `Invalid mode: a"b`))
	h.readyTools(d.ID())
	st, body := h.call("POST", "/api/devices/"+d.ID()+"/tools/self.test.mode/call", map[string]any{"timeoutMs": 20000})
	if st != 502 || errCode(body) != "device_error" || !strings.Contains(errMessage(body), `Invalid mode: a"b`) {
		t.Fatalf("call = %d %v, want 502 device_error with the device's raw text", st, body)
	}
	if !d.Connected() {
		t.Fatal("the device must stay connected")
	}
	h.waitEvent(d.ID(), "bad_mcp_reply")
	check()
}

// Bytes that are not UTF-8 in what a device sends must not reach API or
// SSE clients, which fail to decode them.
func TestInvalidUTF8FromDevicesIsNotServed(t *testing.T) {
	h := startHub(t, "", nil)
	d := h.device(sim.Config{DeviceID: "aa:00:00:00:0f:02", Faults: sim.Faults{InvalidUTF8: true}},
		&sim.Tool{Name: "self.test.echo", Description: "Echo.", Handler: func(_ context.Context, _ sim.Args) (any, error) { return "hello", nil }})
	iotDev := h.device(sim.Config{DeviceID: "aa:00:00:00:0f:03", Mode: sim.ModeIoT, Faults: sim.Faults{InvalidUTF8: true}})
	h.readyTools(d.ID())
	waitFor(t, "IoT things", func() bool { return h.thing(iotDev.ID(), "Lamp") != nil })
	raw := func(method, path string) []byte {
		t.Helper()
		req, _ := http.NewRequest(method, h.URL()+path, strings.NewReader("{}"))
		req.Header.Set("Authorization", "Bearer "+h.Token)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return b
	}
	for _, req := range [][2]string{
		{"POST", "/api/devices/" + d.ID() + "/tools/self.test.echo/call"},
		{"GET", "/api/devices/" + d.ID() + "/tools"},
		{"GET", "/api/devices/" + iotDev.ID() + "/iot"},
		{"GET", "/api/calls?limit=10"},
	} {
		path := req[1]
		b := raw(req[0], path)
		if strings.HasPrefix(path, "/api/calls") { // call records are written asynchronously
			waitFor(t, "the call record", func() bool { b = raw("GET", path); return bytes.Contains(b, []byte("self.test.echo")) })
		}
		if !utf8.Valid(b) {
			t.Errorf("%s: response is not valid UTF-8: %q", path, b)
		}
		if !bytes.Contains(b, []byte("\uFFFD")) {
			t.Errorf("%s: the device's text is missing (want U+FFFD in place of the bad bytes): %s", path, b)
		}
	}
}

// A device asked for its tools right after boot may answer badly; the hub
// asks again (after 1 s) while the connection lives, and says what happened.
func TestToolDiscoveryIsRetried(t *testing.T) {
	h := startHub(t, "", nil)
	d := h.device(sim.Config{DeviceID: "aa:00:00:00:0f:04", Faults: sim.Faults{FailLists: 1}})
	tools := h.readyTools(d.ID())
	if len(tools) == 0 {
		t.Fatal("no tools")
	}
	h.waitEvent(d.ID(), "tools/list attempt 1 failed: device error: Tool list not ready; retrying in 1s")
	if _, dev := h.call("GET", "/api/devices/"+d.ID(), nil); dev["toolsError"] != nil {
		t.Fatalf("toolsError %v after a successful retry, want none", dev["toolsError"])
	}
}

// A device that never answers its list well is given up on after a few
// attempts, and its record says so.
func TestToolDiscoveryGivesUp(t *testing.T) {
	h := startHub(t, "", nil)
	d := h.device(sim.Config{DeviceID: "aa:00:00:00:0f:05", Faults: sim.Faults{FailLists: 1000}})
	deadline := time.Now().Add(60 * time.Second) // 1 + 2 + 4 s of waits
	for {
		_, dev := h.call("GET", "/api/devices/"+d.ID(), nil)
		msg, _ := dev["toolsError"].(string)
		if strings.Contains(msg, "tools/list attempt 4 failed") && strings.Contains(msg, "gave up") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("discovery never gave up; toolsError %q", msg)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for i := 1; i <= 3; i++ {
		h.waitEvent(d.ID(), fmt.Sprintf("tools/list attempt %d failed", i))
	}
	if !d.Connected() {
		t.Fatal("the device must stay connected")
	}
}

// Firmware 1.7.7 may send its first states before its descriptors: the
// things must still get their descriptors, methods and states, and commands
// must work.
func TestIoTStatesBeforeDescriptors(t *testing.T) {
	h := startHub(t, "", nil)
	d := h.device(sim.Config{DeviceID: "aa:00:00:00:0f:06", Mode: sim.ModeIoT, IoTThings: sim.ThingsV177,
		Faults: sim.Faults{StatesFirst: true}})
	id := d.ID()
	waitFor(t, "the lamp with its descriptor and state", func() bool {
		l := h.thing(id, "Lamp")
		if l == nil {
			return false
		}
		methods, _ := l["methods"].(map[string]any)
		state, _ := l["state"].(map[string]any)
		return methods["turn_on"] != nil && state["power"] == false
	})
	st, body := h.call("POST", "/api/devices/"+id+"/iot/commands", map[string]any{
		"commands": []map[string]any{{"name": "Lamp", "method": "turn_on", "parameters": map[string]any{}}},
	})
	if st != 202 {
		t.Fatalf("commands = %d %v", st, body)
	}
	waitFor(t, "the lamp on", d.LampOn)
}

// Commands to a device that has sent states but no descriptors yet are
// refused with a message that says what to do.
func TestIoTCommandBeforeAnyDescriptor(t *testing.T) {
	h := startHub(t, "", nil)
	c := h.rawDevice("aa:00:00:00:0f:07")
	send(t, c, `{"session_id":"","type":"iot","update":true,"states":[{"name":"Lamp","state":{"power":false}}]}`)
	var body map[string]any
	waitFor(t, "the refusal", func() bool {
		var st int
		st, body = h.call("POST", "/api/devices/aa:00:00:00:0f:07/iot/commands", map[string]any{
			"commands": []map[string]any{{"name": "Lamp", "method": "turn_on", "parameters": map[string]any{}}},
		})
		return st == 422
	})
	if msg := errMessage(body); !strings.Contains(msg, "has not described any things yet") {
		t.Fatalf("message %q, want it to say no things are described yet", msg)
	}
	if l := h.thing("aa:00:00:00:0f:07", "Lamp"); l != nil {
		t.Fatalf("a thing without a descriptor is listed: %v", l)
	}
	// The state is not lost: it shows once the descriptor arrives.
	send(t, c, `{"session_id":"","type":"iot","update":true,"descriptors":[{"name":"Lamp","description":"A lamp","properties":{"power":{"description":"on","type":"boolean"}},"methods":{"turn_on":{"description":"on","parameters":{}}}}]}`)
	waitFor(t, "the lamp with its early state", func() bool {
		l := h.thing("aa:00:00:00:0f:07", "Lamp")
		state, _ := l["state"].(map[string]any)
		return l != nil && l["description"] == "A lamp" && state["power"] == false
	})
}
