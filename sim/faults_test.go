package sim_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/xiaozhi-hub/hub/sim"
)

func TestFailingAndSlowTools(t *testing.T) {
	h := newFakeHub(t)
	d, hc := connect(t, h, sim.Config{})
	slow := sim.SlowTool("test.slow", 300*time.Millisecond)
	started := make(chan struct{}, 1)
	sleep := slow.Handler
	slow.Handler = func(ctx context.Context, a sim.Args) (any, error) {
		started <- struct{}{}
		return sleep(ctx, a)
	}
	err := d.AddTool(
		sim.FailingTool("test.fail", "Failed to capture photo"),
		slow,
		&sim.Tool{Name: "test.json", Handler: func(ctx context.Context, a sim.Args) (any, error) {
			if sim.DeviceFrom(ctx) != d {
				t.Error("DeviceFrom does not return the device")
			}
			return json.RawMessage(`{ "a" : [1, 2], "b": "<&>" }`), nil
		}},
	)
	if err != nil {
		t.Fatal(err)
	}
	e := errorObject(t, hc.rpc("tools/call", `{"name":"test.fail"}`))
	if e["message"] != "Failed to capture photo" || len(e) != 1 {
		t.Errorf("failing tool error %v", e)
	}
	if got := hc.callText("test.json", `{}`); got != `{"a":[1,2],"b":"<&>"}` {
		t.Errorf("JSON result text %s", got)
	}

	// A slow tool blocks the main loop: the reply to a later request, even
	// an error sent "at once", waits until the tool is done (docs/protocol.md §12.13). The
	// tool's own reply is scheduled again when it ends, so it comes after.
	// (The elapsed time is checked from below only: the tool sleeps 300 ms.)
	start := time.Now()
	hc.sendMCP(`{"jsonrpc":"2.0","id":100,"method":"tools/call","params":{"name":"test.slow"}}`)
	<-started // the slow tool holds the main loop
	hc.sendMCP(`{"jsonrpc":"2.0","id":101,"method":"tools/call","params":{"name":"self.nope"}}`)
	first := hc.nextMCP()
	if el := time.Since(start); el < 300*time.Millisecond {
		t.Errorf("reply to the second request after %v, before the slow tool ended", el)
	}
	second := hc.nextMCP()
	if !strings.Contains(string(first), `"id":101,"error":{"message":"Unknown tool: self.nope"}`) ||
		!strings.Contains(string(second), `"id":100,"result":{"content":[{"type":"text","text":"done"}],"isError":false}`) {
		t.Errorf("order: %s then %s", first, second)
	}
}

func TestToolValidationOnAdd(t *testing.T) {
	d := sim.New(sim.Config{URL: "ws://127.0.0.1:1/"})
	for _, bad := range []*sim.Tool{
		{},
		{Name: "self.get_device_status"}, // duplicate
		{Name: "x", Props: []sim.Prop{sim.String("s").Range(0, 1)}},
		{Name: "x", Props: []sim.Prop{sim.Int("i").Default("1")}},
		{Name: "x", Props: []sim.Prop{sim.Int("i").Default(5).Range(0, 3)}},
		{Name: "x", Props: []sim.Prop{{Name: "f", Type: "number"}}},
	} {
		if err := d.AddTool(bad); err == nil {
			t.Errorf("AddTool(%+v) accepted", bad)
		}
	}
	tool := &sim.Tool{Name: "x", Description: "a<b", Props: []sim.Prop{
		sim.Int("q").Default(80).Range(1, 100), sim.Bool("on"), sim.String("s").Default("d"),
	}}
	want := `{"name":"x","description":"a<b","inputSchema":{"type":"object","properties":{"q":{"type":"integer","default":80,"minimum":1,"maximum":100},"on":{"type":"boolean"},"s":{"type":"string","default":"d"}},"required":["on"]}}`
	if tool.JSON() != want {
		t.Errorf("tool JSON\n got %s\nwant %s", tool.JSON(), want)
	}
}

func TestListChangedExtension(t *testing.T) {
	h := newFakeHub(t)
	d, hc := connect(t, h, sim.Config{NoScreen: true})
	if err := d.AddTool(&sim.Tool{Name: "test.new"}); err != nil {
		t.Fatal(err)
	}
	if err := d.NotifyToolsChanged(); err != nil {
		t.Fatal(err)
	}
	if got := string(hc.nextMCP()); got != `{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}` {
		t.Errorf("notification %s", got)
	}
	var res struct{ Tools []struct{ Name string } }
	result(t, hc.rpc("tools/list", ""), &res)
	if len(res.Tools) != 3 || res.Tools[2].Name != "test.new" {
		t.Errorf("after add: %+v", res.Tools)
	}
	if !d.RemoveTool("test.new") || d.RemoveTool("test.new") {
		t.Error("RemoveTool")
	}
	result(t, hc.rpc("tools/list", ""), &res)
	if len(res.Tools) != 2 {
		t.Errorf("after remove: %+v", res.Tools)
	}
}

func TestFaults(t *testing.T) {
	h := newFakeHub(t)
	d, hc := connect(t, h, sim.Config{Faults: sim.Faults{ErrorCode: -32601}})
	e := errorObject(t, hc.rpc("ping", ""))
	if e["code"] != -32601.0 || e["message"] != "Method not implemented: ping" {
		t.Errorf("ErrorCode fault: %v", e)
	}

	d.SetFaults(sim.Faults{PaginationLoop: true})
	for range 3 {
		var res map[string]any
		result(t, hc.rpc("tools/list", `{"cursor":"self.audio_speaker.set_volume"}`), &res)
		if res["nextCursor"] != "self.audio_speaker.set_volume" {
			t.Fatalf("PaginationLoop: nextCursor %v", res["nextCursor"])
		}
	}

	d.SetFaults(sim.Faults{UnknownIDReplies: true, ReplyDelay: 200 * time.Millisecond})
	start := time.Now()
	hc.sendMCP(`{"jsonrpc":"2.0","id":7,"method":"initialize"}`)
	stray, reply := hc.nextMCP(), hc.nextMCP()
	if string(stray) != `{"jsonrpc":"2.0","id":1073741831,"result":{}}` || !strings.Contains(string(reply), `"id":7,"result"`) {
		t.Errorf("UnknownIDReplies: %s then %s", stray, reply)
	}
	if el := time.Since(start); el < 200*time.Millisecond {
		t.Errorf("ReplyDelay: reply after %v", el)
	}
}
