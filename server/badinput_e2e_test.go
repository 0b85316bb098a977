package server_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/xiaozhi-hub/hub/server"
	"github.com/xiaozhi-hub/hub/sim"
)

// rawDevice is a hand-driven WebSocket client: it completes the hello like a
// device and then sends whatever a test wants, good or bad.
func (h *testHub) rawDevice(id string) *websocket.Conn {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	hdr := http.Header{"Device-Id": {id}, "Client-Id": {"raw-" + id}, "Protocol-Version": {"1"}}
	c, _, err := websocket.Dial(ctx, h.DeviceURL(), &websocket.DialOptions{HTTPHeader: hdr})
	if err != nil {
		h.t.Fatalf("dial: %v", err)
	}
	h.t.Cleanup(func() { c.CloseNow() })
	c.SetReadLimit(1 << 20)
	send(h.t, c, `{"type":"hello","version":1,"transport":"websocket","audio_params":{"format":"opus","sample_rate":16000,"channels":1,"frame_duration":60}}`)
	_, data, err := c.Read(ctx)
	if err != nil || !strings.Contains(string(data), `"transport":"websocket"`) {
		h.t.Fatalf("server hello: %s %v", data, err)
	}
	return c
}

func send(t testing.TB, c *websocket.Conn, msg string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
		t.Fatalf("write: %v", err)
	}
}

// closedWith reads until the hub closes the connection and returns the
// close status and reason.
func closedWith(t *testing.T, c *websocket.Conn) (websocket.StatusCode, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		if _, _, err := c.Read(ctx); err != nil {
			var ce websocket.CloseError
			if ok := asCloseError(err, &ce); ok {
				return ce.Code, ce.Reason
			}
			return -1, err.Error()
		}
	}
}

// bystander is a healthy device that must not notice anything.
func bystander(t *testing.T, h *testHub) func() {
	d := h.device(sim.Config{DeviceID: "aa:00:00:00:0b:ff"})
	h.readyTools(d.ID())
	return func() {
		t.Helper()
		st, body := h.call("POST", "/api/devices/"+d.ID()+"/tools/self.audio_speaker.set_volume/call", map[string]any{"arguments": map[string]any{"volume": 7}})
		if st != 200 || d.Volume() != 7 || !d.Connected() {
			t.Fatalf("the other device was affected: %d %v", st, body)
		}
	}
}

func TestBadFramesKeepTheConnection(t *testing.T) {
	h := startHub(t, "", nil)
	check := bystander(t, h)
	c := h.rawDevice("aa:00:00:00:0b:01")
	for _, bad := range []string{
		`{"type":"hello"`,                        // invalid JSON
		`[1,2,3]`,                                // not an object
		`{"session_id":"x"}`,                     // no type
		`{"type":42}`,                            // type of the wrong type
		`{"type":"mcp","payload":"nope"}`,        // payload not an object
		`{"type":"mcp","payload":{"id":1}}`,      // MCP from a device without features.mcp
		`{"type":"iot","descriptors":{"a":1}}`,   // descriptors not a list
		`{"type":"iot","states":[{"state":{}}]}`, // state without a name
		`{"type":"teleport","to":"moon"}`,        // unknown type: recorded
		`{"session_id":"x","type":"listen","state":"start","mode":"auto"}`,
	} {
		send(t, c, bad)
	}
	// Binary audio in every framing, including broken ones, is counted and dropped.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, frame := range [][]byte{{0xF8}, {0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9, 1}, {}} {
		if err := c.Write(ctx, websocket.MessageBinary, frame); err != nil {
			t.Fatal(err)
		}
	}
	h.waitEvent("aa:00:00:00:0b:01", "teleport")
	h.waitEvent("aa:00:00:00:0b:01", "invalid JSON")
	h.waitEvent("aa:00:00:00:0b:01", "type:listen")
	// Still connected and still a valid IoT device.
	send(t, c, `{"type":"iot","update":true,"descriptors":[{"name":"Lamp","description":"lamp","properties":{"power":{"description":"on","type":"boolean"}},"methods":{"TurnOn":{"description":"on","parameters":{}}}}]}`)
	waitFor(t, "the lamp after the bad frames", func() bool { return h.thing("aa:00:00:00:0b:01", "Lamp") != nil })
	_, dev := h.call("GET", "/api/devices/aa:00:00:00:0b:01", nil)
	if dev["online"] != true {
		t.Fatalf("device dropped for bad frames: %v", dev)
	}
	check()
}

func TestOversizeFrameClosesOnlyThatConnection(t *testing.T) {
	h := startHub(t, "", nil)
	check := bystander(t, h)
	c := h.rawDevice("aa:00:00:00:0b:02")
	send(t, c, `{"type":"listen","text":"`+strings.Repeat("x", 300<<10)+`"}`)
	code, _ := closedWith(t, c)
	if code != websocket.StatusMessageTooBig {
		t.Fatalf("close status %d, want 1009", code)
	}
	check()
}

func TestFloodIsDisconnectedWithAReason(t *testing.T) {
	h := startHub(t, "", nil)
	check := bystander(t, h)
	c := h.rawDevice("aa:00:00:00:0b:03")
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for i := 0; i < 5000; i++ {
			if c.Write(ctx, websocket.MessageText, []byte(`{"type":"listen","state":"detect","text":"hi"}`)) != nil {
				return
			}
		}
	}()
	code, reason := closedWith(t, c)
	if code != websocket.StatusPolicyViolation || !strings.Contains(reason, "too many messages") {
		t.Fatalf("close %d %q, want 1008 naming the limit", code, reason)
	}
	check()
}

func TestBadHandshakes(t *testing.T) {
	h := startHub(t, "", func(c *server.Config) { c.DeviceAuth = "open" })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for name, hdr := range map[string]http.Header{
		"no device id":   {},
		"bad device id":  {"Device-Id": {`aa"bb`}},
		"bad protocol":   {"Device-Id": {"aa:00:00:00:0b:04"}, "Protocol-Version": {"9"}},
		"long device id": {"Device-Id": {strings.Repeat("a", 65)}},
	} {
		_, res, err := websocket.Dial(ctx, h.DeviceURL(), &websocket.DialOptions{HTTPHeader: hdr})
		if err == nil || res == nil || res.StatusCode != 400 {
			t.Fatalf("%s: want 400, got %v %v", name, res, err)
		}
	}
	// A hello whose version is not a number is refused with a reason.
	c, _, err := websocket.Dial(ctx, h.DeviceURL(), &websocket.DialOptions{HTTPHeader: http.Header{"Device-Id": {"aa:00:00:00:0b:05"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	send(t, c, `{"type":"hello","version":"one"}`)
	if code, reason := closedWith(t, c); code != websocket.StatusProtocolError || !strings.Contains(reason, "version") {
		t.Fatalf("bad hello closed with %d %q", code, reason)
	}
}

func TestBadAPIInput(t *testing.T) {
	h := startHub(t, "", nil)
	d := h.device(sim.Config{DeviceID: "aa:00:00:00:0b:06"})
	h.readyTools(d.ID())
	for _, tc := range []struct {
		method, path string
		body         any
		want         int
	}{
		{"PATCH", "/api/devices/" + d.ID(), map[string]any{"name": 5}, 400},
		{"PATCH", "/api/devices/" + d.ID(), map[string]any{"colour": "red"}, 400},
		{"POST", "/api/devices/" + d.ID() + "/tools/self.audio_speaker.set_volume/call", map[string]any{"arguments": "loud"}, 422},
		{"POST", "/api/devices/" + d.ID() + "/iot/commands", map[string]any{"commands": "all"}, 400},
		{"GET", "/api/calls?limit=many", nil, 400},
	} {
		st, body := h.call(tc.method, tc.path, tc.body)
		if st != tc.want || errMessage(body) == "" {
			t.Errorf("%s %s %v: %d %v, want %d with a message", tc.method, tc.path, tc.body, st, body, tc.want)
		}
	}
	if calls := d.ReceivedCalls(); len(calls) != 0 {
		t.Fatalf("bad API input reached the device: %v", calls)
	}
}
