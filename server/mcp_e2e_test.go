package server_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xiaozhi-hub/hub/sim"
)

func TestHelloToReady(t *testing.T) {
	h := startHub(t, "", nil)
	d := h.device(sim.Config{DeviceID: "aa:00:00:00:00:01", Board: "esp-box-3", Firmware: "2.4.2", Lamp: true})

	if d.SessionID() == "" {
		t.Fatal("the server hello must carry a session_id")
	}
	if a := d.DownlinkAudio(); a.SampleRate != 24000 || a.FrameDuration != 60 {
		t.Fatalf("server hello audio_params = %+v", a)
	}
	tools := h.readyTools(d.ID())
	if got, want := toolNames(tools), d.ToolNames(); !slices.Equal(got, want) {
		t.Fatalf("hub tools %v, device has %v", got, want)
	}
	st, dev := h.call("GET", "/api/devices/"+d.ID(), nil)
	if st != 200 || dev["online"] != true || dev["board"] != "esp-box-3" || dev["firmware"] != "2.4.2" || dev["mcp"] != true {
		t.Fatalf("device = %d %v", st, dev)
	}
	if int(dev["toolCount"].(float64)) != len(tools) {
		t.Fatalf("toolCount %v, tools %d", dev["toolCount"], len(tools))
	}
	// User-only tools are fetched (withUserTools) and marked.
	var reboot map[string]any
	for _, tl := range tools {
		if m := tl.(map[string]any); m["name"] == "self.reboot" {
			reboot = m
		}
	}
	if reboot == nil || reboot["userOnly"] != true {
		t.Fatalf("self.reboot should be listed and userOnly: %v", reboot)
	}
	st, list := h.call("GET", "/api/devices", nil)
	devs, _ := list["devices"].([]any)
	if st != 200 || len(devs) != 1 {
		t.Fatalf("GET /api/devices = %d %v", st, list)
	}
}

// fillers returns n tools with long descriptions, so that the firmware's
// 8000-byte pages split the list.
func fillers(n int) []*sim.Tool {
	var ts []*sim.Tool
	for i := range n {
		ts = append(ts, &sim.Tool{
			Name:        fmt.Sprintf("self.filler.tool_%02d", i),
			Description: strings.Repeat("A tool that exists to make the list long. ", 20),
			Props:       []sim.Prop{sim.Int("level"), sim.String("label")},
		})
	}
	return ts
}

func TestPaginationAcrossThreePages(t *testing.T) {
	h := startHub(t, "", nil)
	d := h.device(sim.Config{DeviceID: "aa:00:00:00:00:02", RecordFrames: true}, fillers(30)...)
	tools := h.readyTools(d.ID())
	if got, want := toolNames(tools), d.ToolNames(); !slices.Equal(got, want) {
		t.Fatalf("hub has %d tools, device %d", len(got), len(want))
	}
	pages := 0
	for _, f := range d.ReceivedRaw() {
		if strings.Contains(string(f), `"tools/list"`) {
			pages++
		}
	}
	if pages < 3 {
		t.Fatalf("the list came in %d pages; the test needs at least 3", pages)
	}
}

func TestPaginationLoopDoesNotHoldTheHub(t *testing.T) {
	h := startHub(t, "", nil)
	d := h.device(sim.Config{DeviceID: "aa:00:00:00:00:03", Faults: sim.Faults{PaginationLoop: true}}, fillers(30)...)
	// The hub gives up on the loop, keeps what it read, and says why.
	waitFor(t, "partial tools", func() bool {
		_, body := h.call("GET", "/api/devices/"+d.ID()+"/tools", nil)
		tools, _ := body["tools"].([]any)
		return len(tools) > 0
	})
	h.waitEvent(d.ID(), "repeated cursor") // a tools_error event says why the list stopped
	// The device is still usable.
	st, _ := h.call("POST", "/api/devices/"+d.ID()+"/tools/self.get_device_status/call", map[string]any{})
	if st != 200 {
		t.Fatalf("call after a pagination loop = %d", st)
	}
}

func TestCallSuccessAndDeviceErrors(t *testing.T) {
	h := startHub(t, "", nil)
	d := h.device(sim.Config{DeviceID: "aa:00:00:00:00:04"}, sim.FailingTool("self.camera.take_photo", "Failed to capture photo"))
	h.readyTools(d.ID())
	base := "/api/devices/" + d.ID() + "/tools/"

	st, body := h.call("POST", base+"self.audio_speaker.set_volume/call", map[string]any{"arguments": map[string]any{"volume": 42}})
	if st != 200 || body["isError"] != false || !strings.Contains(fmt.Sprint(body["content"]), "true") {
		t.Fatalf("set_volume = %d %v", st, body)
	}
	if d.Volume() != 42 {
		t.Fatalf("device volume = %d, want 42", d.Volume())
	}
	st, body = h.call("POST", base+"self.get_device_status/call", nil)
	if st != 200 || !strings.Contains(fmt.Sprint(body["content"]), `"volume":42`) {
		t.Fatalf("get_device_status = %d %v", st, body)
	}

	// The firmware's error form: only "message".
	st, body = h.call("POST", base+"self.camera.take_photo/call", map[string]any{"arguments": map[string]any{"question": "what?"}})
	if st != 502 || errCode(body) != "device_error" || !strings.Contains(errMessage(body), "Failed to capture photo") {
		t.Fatalf("tool failure = %d %v", st, body)
	}
	// The standard form with a code is accepted too.
	d.SetFaults(sim.Faults{ErrorCode: -32603})
	st, body = h.call("POST", base+"self.camera.take_photo/call", map[string]any{"arguments": map[string]any{"question": "what?"}})
	if st != 502 || !strings.Contains(errMessage(body), "Failed to capture photo") {
		t.Fatalf("tool failure with code = %d %v", st, body)
	}
	d.SetFaults(sim.Faults{})

	// Every call is in the history (written in the background).
	var recs []any
	waitFor(t, "4 call records", func() bool {
		_, calls := h.call("GET", "/api/calls?device="+d.ID(), nil)
		recs, _ = calls["calls"].([]any)
		return len(recs) == 4
	})
	newest := recs[0].(map[string]any)
	if newest["tool"] != "self.camera.take_photo" || newest["outcome"] != "device_error" || newest["caller"] != "api" {
		t.Fatalf("newest record = %v", newest)
	}
}

func TestValidationRejectsBeforeTheDevice(t *testing.T) {
	h := startHub(t, "", nil)
	d := h.device(sim.Config{DeviceID: "aa:00:00:00:00:05"})
	h.readyTools(d.ID())
	base := "/api/devices/" + d.ID() + "/tools/"
	for _, args := range []map[string]any{{"volume": 150}, {"volume": "50"}, {}} {
		st, body := h.call("POST", base+"self.audio_speaker.set_volume/call", map[string]any{"arguments": args})
		if st != 422 || errCode(body) != "invalid_argument" {
			t.Fatalf("%v: %d %v", args, st, body)
		}
	}
	if calls := d.ReceivedCalls(); len(calls) != 0 {
		t.Fatalf("the device saw calls the hub should have refused: %v", calls)
	}
	st, body := h.call("POST", base+"self.no_such_tool/call", nil)
	if st != 404 || errCode(body) != "not_found" {
		t.Fatalf("unknown tool = %d %v", st, body)
	}
	st, _ = h.call("POST", "/api/devices/ff:ff:ff:ff:ff:ff/tools/self.reboot/call", nil)
	if st != 404 {
		t.Fatalf("unknown device = %d", st)
	}
}

// slowTool answers after d, or when its device goes away.
func slowTool(d time.Duration) *sim.Tool {
	return &sim.Tool{Name: "self.slow", Description: "takes its time", Handler: func(ctx context.Context, _ sim.Args) (any, error) {
		select {
		case <-time.After(d):
			return "done", nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}}
}

func TestTimeout(t *testing.T) {
	h := startHub(t, "", nil)
	d := h.device(sim.Config{DeviceID: "aa:00:00:00:00:06"}, slowTool(3*time.Second))
	h.readyTools(d.ID())
	st, body := h.call("POST", "/api/devices/"+d.ID()+"/tools/self.slow/call", map[string]any{"timeoutMs": 200})
	if st != 504 || errCode(body) != "timeout" {
		t.Fatalf("slow call = %d %v", st, body)
	}
	for _, bad := range []any{-5, 300001, "soon"} {
		st, _ := h.call("POST", "/api/devices/"+d.ID()+"/tools/self.slow/call", map[string]any{"timeoutMs": bad})
		if st != 422 && st != 400 {
			t.Fatalf("timeoutMs %v = %d, want a 4xx", bad, st)
		}
	}
}

func TestDisconnectMidCallFailsAtOnce(t *testing.T) {
	h := startHub(t, "", nil)
	d := h.device(sim.Config{DeviceID: "aa:00:00:00:00:07"}, slowTool(time.Minute))
	h.readyTools(d.ID())
	type result struct {
		st   int
		body map[string]any
	}
	res := make(chan result, 2)
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			st, body := h.call("POST", "/api/devices/"+d.ID()+"/tools/self.slow/call", map[string]any{"timeoutMs": 60000})
			res <- result{st, body}
		})
	}
	waitFor(t, "the calls to reach the device", func() bool { return len(d.ReceivedCalls()) == 2 })
	d.Drop()
	for range 2 {
		r := <-res
		if r.st != 502 || errCode(r.body) != "device_disconnected" {
			t.Fatalf("call during disconnect = %d %v", r.st, r.body)
		}
	}
	wg.Wait()
	waitFor(t, "offline", func() bool {
		_, dev := h.call("GET", "/api/devices/"+d.ID(), nil)
		return dev["online"] == false
	})
	st, body := h.call("POST", "/api/devices/"+d.ID()+"/tools/self.get_device_status/call", nil)
	if st != 409 || errCode(body) != "device_offline" {
		t.Fatalf("call to an offline device = %d %v", st, body)
	}
}

func TestReconnectServesCacheAtOnce(t *testing.T) {
	h := startHub(t, "", nil)
	cfg := sim.Config{URL: h.DeviceURL(), DeviceID: "aa:00:00:00:00:08"}
	d := h.device(cfg)
	want := toolNames(h.readyTools(d.ID()))
	d.Close()
	waitFor(t, "offline", func() bool {
		_, dev := h.call("GET", "/api/devices/"+d.ID(), nil)
		return dev["online"] == false
	})
	// Offline: the cache is still served, and it is not stale.
	_, body := h.call("GET", "/api/devices/"+d.ID()+"/tools", nil)
	if got := toolNames(body["tools"].([]any)); !slices.Equal(got, want) {
		t.Fatalf("offline cache %v, want %v", got, want)
	}

	// The device comes back and answers slowly: the cached list is served
	// at once, marked stale, until the re-list completes.
	cfg.Faults = sim.Faults{ReplyDelay: 500 * time.Millisecond}
	d2 := h.device(cfg)
	st, body := h.call("GET", "/api/devices/"+d2.ID()+"/tools", nil)
	if st != 200 || body["stale"] != true || !slices.Equal(toolNames(body["tools"].([]any)), want) {
		t.Fatalf("right after reconnect: %d stale=%v tools=%v", st, body["stale"], body["tools"])
	}
	h.readyTools(d2.ID())
}

func TestToolsListChangedReLists(t *testing.T) {
	h := startHub(t, "", nil)
	d := h.device(sim.Config{DeviceID: "aa:00:00:00:00:09"})
	before := len(h.readyTools(d.ID()))
	d.AddTool(&sim.Tool{Name: "self.fan.turn_on", Description: "turn the fan on"})
	if err := d.NotifyToolsChanged(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the new tool", func() bool {
		_, body := h.call("GET", "/api/devices/"+d.ID()+"/tools", nil)
		tools, _ := body["tools"].([]any)
		return len(tools) == before+1 && slices.Contains(toolNames(tools), "self.fan.turn_on")
	})
	h.waitEvent(d.ID(), "self.fan.turn_on") // the tools_changed event names the added tool
}
