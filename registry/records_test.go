package registry_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/metrics"
	"github.com/xiaozhi-hub/hub/registry"
	"github.com/xiaozhi-hub/hub/registry/registrytest"
)

// clock is a settable time for Options.Now.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func counter(t *testing.T, m *metrics.Metrics, name string, labels ...string) float64 {
	t.Helper()
	mfs, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		var sum float64
	metric:
		for _, mt := range mf.GetMetric() {
			for i := 0; i+1 < len(labels); i += 2 {
				if !hasLabel(mt, labels[i], labels[i+1]) {
					continue metric
				}
			}
			sum += mt.GetCounter().GetValue()
		}
		return sum
	}
	return 0
}

func hasLabel(m *dto.Metric, name, value string) bool {
	for _, l := range m.GetLabel() {
		if l.GetName() == name && l.GetValue() == value {
			return true
		}
	}
	return false
}

// TestDeviceEventsBounded: a chatty device gets a burst of 100 events and
// then 10 per second; the rest are dropped and counted, another device is
// unaffected, and reconnecting does not refill the budget.
func TestDeviceEventsBounded(t *testing.T) {
	clk := &clock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	m := metrics.New()
	h := registrytest.New(t, registry.Options{Now: clk.Now, Metrics: m})
	events, stop := h.Reg.Subscribe(hub.EventDeviceMessage)
	defer stop()
	chatty := h.Connect(t, "chatty")
	quiet := h.Connect(t, "quiet")
	for range 150 {
		chatty.Link.Event(hub.EventDeviceMessage, map[string]any{"type": "listen"})
	}
	chatty = h.Connect(t, "chatty") // a reconnect
	for range 5 {
		chatty.Link.Event(hub.EventDeviceMessage, map[string]any{"type": "listen"})
	}
	quiet.Link.Event(hub.EventDeviceMessage, map[string]any{"type": "listen"})
	clk.add(time.Second)
	for range 20 {
		chatty.Link.Event(hub.EventDeviceMessage, map[string]any{"type": "listen"})
	}
	chatty.Link.Event(hub.EventDeviceMessage, map[string]any{"type": "x", "blob": strings.Repeat("a", 10<<10)})
	clk.add(time.Second)
	chatty.Link.Event(hub.EventDeviceMessage, map[string]any{"type": "x", "blob": strings.Repeat("a", 10<<10)})

	got := map[string]int{}
	var big hub.Event
	for len(events) > 0 {
		ev := <-events
		got[ev.DeviceID]++
		big = ev
	}
	if got["chatty"] != 111 || got["quiet"] != 1 {
		t.Errorf("events delivered %v, want chatty 111 (100 + 10 after a second + 1), quiet 1", got)
	}
	if n := counter(t, m, "xiaozhi_hub_device_events_limited_total", "action", "dropped"); n != 66 {
		t.Errorf("dropped events counted %v, want 66 (50 + 5 + 10 + the first big one)", n)
	}
	if n := counter(t, m, "xiaozhi_hub_device_events_limited_total", "action", "truncated"); n != 1 {
		t.Errorf("truncated events counted %v, want 1", n)
	}
	if d, ok := big.Data.(map[string]any); !ok || d["truncated"] != true || d["type"] != "x" {
		t.Errorf("an oversized event carries %v, want a truncated summary with its type", big.Data)
	}
}

// TestCallRecords: each call gets the next id, its record is stored when
// the call returns, and call_finished carries the same record; ids go on
// after a restart.
func TestCallRecords(t *testing.T) {
	ctx := context.Background()
	h := registrytest.New(t, registry.Options{})
	d := h.Connect(t, "d1", mcpTool("self.a"))
	d.Answer("self.a", registrytest.Answer{Err: hub.Errorf(hub.EDEVICE, "lamp is broken")})
	events, stop := h.Reg.Subscribe(hub.EventCallFinished)
	defer stop()
	call := func() {
		t.Helper()
		_, err := h.Reg.CallTool(ctx, registry.CallRequest{DeviceID: "d1", Tool: "self.a", Caller: "test"})
		if hub.ErrorCode(err) != hub.EDEVICE {
			t.Fatalf("call: %v, want EDEVICE", err)
		}
		recs, err := h.Reg.Calls(ctx, hub.CallFilter{Limit: 1})
		if err != nil || len(recs) != 1 {
			t.Fatalf("calls %v, %v: the record is not stored when the call returns", recs, err)
		}
		ev := <-events
		if rec, ok := ev.Data.(hub.CallRecord); !ok || rec.ID != recs[0].ID {
			t.Errorf("call_finished carries %+v, stored record has id %d", ev.Data, recs[0].ID)
		}
		if r := recs[0]; r.Outcome != hub.OutcomeDeviceError || r.Caller != "test" || !strings.Contains(r.Result, "broken") {
			t.Errorf("record %+v", r)
		}
	}
	call()
	call()
	recs, _ := h.Reg.Calls(ctx, hub.CallFilter{})
	if len(recs) != 2 || recs[0].ID != recs[1].ID+1 {
		t.Fatalf("records %+v, want two with consecutive ids, newest first", recs)
	}
	last := recs[0].ID
	stop()
	h.Restart(t)
	h.Connect(t, "d1", mcpTool("self.a"))
	if _, err := h.Reg.CallTool(ctx, registry.CallRequest{DeviceID: "d1", Tool: "self.a"}); err != nil {
		t.Fatal(err)
	}
	recs, _ = h.Reg.Calls(ctx, hub.CallFilter{Limit: 1})
	if len(recs) != 1 || recs[0].ID != last+1 {
		t.Errorf("after a restart the next record is %+v, want id %d", recs, last+1)
	}
}

// TestCallTimeoutAndHangup: a device slower than the call's timeout gives
// ETIMEOUT at the timeout, one that hangs up mid-call gives EGONE; both are
// recorded with their outcome. Fake time (synctest): no real waiting.
func TestCallTimeoutAndHangup(t *testing.T) {
	ctx := context.Background()
	synctest.Test(t, func(t *testing.T) {
		h := registrytest.New(t, registry.Options{}) // in the bubble, with its goroutines
		d := h.Connect(t, "d1", mcpTool("self.slow"), mcpTool("self.held"))
		d.Answer("self.slow", registrytest.Answer{Result: registrytest.Text("late"), Delay: time.Minute})
		start := time.Now()
		_, err := h.Reg.CallTool(ctx, registry.CallRequest{DeviceID: "d1", Tool: "self.slow", Timeout: 5 * time.Second})
		if hub.ErrorCode(err) != hub.ETIMEOUT {
			t.Errorf("slow call: %v, want ETIMEOUT", err)
		}
		if el := time.Since(start); el != 5*time.Second {
			t.Errorf("slow call took %v of fake time, want the 5 s timeout", el)
		}

		d.Hold()
		done := make(chan error, 1)
		go func() {
			_, err := h.Reg.CallTool(ctx, registry.CallRequest{DeviceID: "d1", Tool: "self.held"})
			done <- err
		}()
		synctest.Wait() // the call waits at the device
		d.Disconnect()
		if err := <-done; hub.ErrorCode(err) != hub.EGONE {
			t.Errorf("call during a hangup: %v, want EGONE", err)
		}
		_, err = h.Reg.CallTool(ctx, registry.CallRequest{DeviceID: "d1", Tool: "self.held"})
		if hub.ErrorCode(err) != hub.EOFFLINE {
			t.Errorf("call after the hangup: %v, want EOFFLINE", err)
		}
		recs, err := h.Reg.Calls(ctx, hub.CallFilter{})
		if err != nil {
			t.Fatal(err)
		}
		var outcomes []string
		for _, r := range recs {
			outcomes = append(outcomes, r.Outcome)
		}
		want := []string{hub.OutcomeOffline, hub.OutcomeGone, hub.OutcomeTimeout}
		if strings.Join(outcomes, ",") != strings.Join(want, ",") {
			t.Errorf("recorded outcomes %v, want %v", outcomes, want)
		}
	})
}

// TestOfflineSaysWhatIsTrueOfTheTransport: a call to an offline device
// tells a person what to do about it, which differs by transport: a
// WebSocket device connects only to talk (wake it), an MQTT device stays
// connected while it is on (it is off or out of reach; waking it is no
// advice).
func TestOfflineSaysWhatIsTrueOfTheTransport(t *testing.T) {
	ctx := context.Background()
	h := registrytest.New(t, registry.Options{})
	for _, tc := range []struct{ transport, want, not string }{
		{"websocket", "wake it", "switched off"},
		{"mqtt", "switched off", "wake it"},
	} {
		id := "dev-" + tc.transport
		d := registrytest.Connect(t, h.Reg, registry.ConnectInfo{DeviceID: id, ClientID: "c", ProtocolVersion: 1, MCP: true, Transport: tc.transport}, mcpTool("self.light"))
		d.Disconnect()
		_, err := h.Reg.CallTool(ctx, registry.CallRequest{DeviceID: id, Tool: "self.light"})
		if hub.ErrorCode(err) != hub.EOFFLINE {
			t.Fatalf("%s: call to an offline device: %v, want EOFFLINE", tc.transport, err)
		}
		msg := hub.ErrorMessage(err)
		if !strings.Contains(msg, tc.want) || strings.Contains(msg, tc.not) {
			t.Errorf("%s device offline: %q, want it to say %q and not %q", tc.transport, msg, tc.want, tc.not)
		}
	}
}
