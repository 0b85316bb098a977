package session_test

import (
	"context"
	"fmt"
	"net/http"
	"runtime"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/session"
)

// stackBytes is the memory the process's goroutine stacks take.
func stackBytes() int64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/stacks:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64())
}

// A device connected to talk (a hello, then listen start, as WebSocket
// firmware does) and then silent costs its connection's goroutine a 4 KiB
// stack once the GC has run, not the 8 KiB that the WebSocket library's
// read would keep: its goroutine waits for the device's next bytes below
// the library's frames, where it uses little enough of its stack for the
// GC to halve it after the deeper work of the device's messages.
func TestSilentDeviceHoldsASmallStack(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's frames are larger: stack sizes are measured without it")
	}
	reg, url := startHub(t, session.Options{})
	events, stop := reg.Subscribe(hub.EventDeviceMessage)
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const devices = 300
	runtime.GC()
	before := stackBytes()
	for i := range devices {
		hdr := http.Header{"Device-Id": {fmt.Sprintf("aa:00:00:00:%02x:%02x", i/256, i%256)}, "Client-Id": {"raw"}, "Protocol-Version": {"1"}}
		c, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: hdr})
		if err != nil {
			t.Fatal(err)
		}
		defer c.CloseNow()
		if err := c.Write(ctx, websocket.MessageText, []byte(`{"type":"hello","version":1,"transport":"websocket","audio_params":{"format":"opus","sample_rate":16000,"channels":1,"frame_duration":60}}`)); err != nil {
			t.Fatal(err)
		}
		if _, _, err := c.Read(ctx); err != nil {
			t.Fatal(err)
		}
		if err := c.Write(ctx, websocket.MessageText, []byte(`{"session_id":"","type":"listen","state":"start","mode":"auto"}`)); err != nil {
			t.Fatal(err)
		}
		select {
		case <-events: // the listen was handled; its goroutine goes back to waiting
		case <-ctx.Done():
			t.Fatal("the listen message was not handled")
		}
	}
	for range 4 { // each GC halves a stack at most once
		runtime.GC()
	}
	per := float64(stackBytes()-before) / devices
	t.Logf("%.0f bytes of stack per silent device", per)
	if per > 6<<10 {
		t.Fatalf("%.1f KiB of goroutine stack per silent device, want about 4", per/1024)
	}
}
