package session_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"net/http/httptest"

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
