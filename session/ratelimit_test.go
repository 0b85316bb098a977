package session_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/registry"
	"github.com/xiaozhi-hub/hub/session"
	"github.com/xiaozhi-hub/hub/sim"
	"github.com/xiaozhi-hub/hub/store"
)

// startHub runs the device endpoint with opts over a registry on SQLite
// and returns the registry and the device URL.
func startHub(t *testing.T, opts session.Options) (*registry.Registry, string) {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "hub.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	reg := registry.New(st, registry.Options{})
	if err := reg.Load(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reg.Close)
	opts.Registry = reg
	srv := session.New(opts)
	t.Cleanup(srv.Close)
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	return reg, "ws" + strings.TrimPrefix(ts.URL, "http") + "/xiaozhi/v1/"
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A device's replies to the hub's own requests are not unsolicited
// traffic: however many calls the hub makes, answering them must not use
// up the device's message budget and get it disconnected.
func TestRepliesDoNotCountAgainstTheRateLimit(t *testing.T) {
	reg, url := startHub(t, session.Options{TextRate: 2}) // a burst of 8 messages
	d := sim.New(sim.Config{URL: url, DeviceID: "aa:00:00:00:0e:01"})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := d.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	waitFor(t, "tools", func() bool { tools, stale, _ := reg.Tools(d.ID()); return !stale && len(tools) > 0 })

	const callers, calls = 4, 15 // 60 replies, far over the budget
	var wg sync.WaitGroup
	errs := make(chan error, callers*calls)
	for range callers {
		wg.Go(func() {
			for range calls {
				_, err := reg.CallTool(ctx, registry.CallRequest{DeviceID: d.ID(), Tool: "self.get_device_status", Arguments: json.RawMessage(`{}`)})
				if err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("call failed: %v", err)
	}
	if dev, _ := reg.Device(d.ID()); !dev.Online || d.Stats().Connects != 1 {
		t.Fatalf("the device was disconnected (online %v, connects %d)", dev.Online, d.Stats().Connects)
	}
}

// A device within its burst (4× the rate) stays connected; a flood of
// frames of either kind is disconnected with 1008 and the limit named.
func TestFramesOverTheLimitDisconnect(t *testing.T) {
	for _, tc := range []struct {
		kind   websocket.MessageType
		frame  string
		reason string
	}{
		{websocket.MessageBinary, "opus", "too many audio frames: the limit is 5 per second"},
		{websocket.MessageText, `{"type":"custom"}`, "too many messages: the limit is 5 per second"},
	} {
		reg, url := startHub(t, session.Options{TextRate: 5, AudioRate: 5})
		events, stop := reg.Subscribe(hub.EventDeviceMessage)
		defer stop()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		hdr := http.Header{"Device-Id": {"aa:00:00:00:0e:02"}, "Client-Id": {"raw"}, "Protocol-Version": {"1"}}
		c, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: hdr})
		if err != nil {
			t.Fatal(err)
		}
		defer c.CloseNow()
		write := func(kind websocket.MessageType, frame string) error { return c.Write(ctx, kind, []byte(frame)) }
		if err := write(websocket.MessageText, `{"type":"hello","version":1,"transport":"websocket","audio_params":{"format":"opus","sample_rate":16000,"channels":1,"frame_duration":60}}`); err != nil {
			t.Fatal(err)
		}
		if _, _, err := c.Read(ctx); err != nil {
			t.Fatal(err)
		}
		burst := 20
		if tc.kind == websocket.MessageText {
			burst-- // the message that shows the burst arrived counts too
		}
		for range burst {
			if err := write(tc.kind, tc.frame); err != nil {
				t.Fatal(err)
			}
		}
		// A message after the burst: once it is an event, the burst was read.
		if err := write(websocket.MessageText, `{"type":"custom","last":true}`); err != nil {
			t.Fatal(err)
		}
		for last := false; !last; {
			select {
			case ev := <-events:
				data, _ := json.Marshal(ev.Data)
				last = strings.Contains(string(data), `"last"`)
			case <-ctx.Done():
				t.Fatal("the message after the burst never became an event: was the device disconnected within its burst?")
			}
		}
		if dev, _ := reg.Device("aa:00:00:00:0e:02"); !dev.Online {
			t.Fatalf("%s: a device within its burst of 20 was disconnected", tc.reason)
		}
		go func() {
			for write(tc.kind, tc.frame) == nil {
			}
		}()
		var ce websocket.CloseError
		for {
			if _, _, err = c.Read(ctx); err != nil {
				break
			}
		}
		if !errors.As(err, &ce) || ce.Code != websocket.StatusPolicyViolation || ce.Reason != tc.reason {
			t.Fatalf("a flood was closed with %v, want 1008 %q", err, tc.reason)
		}
	}
}
