package mcpclient_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/mcpclient"
)

// A flood of callers must not overrun a small device: beyond MaxInFlight
// requests they wait, and beyond MaxQueued waiting they are refused at once
// with EBUSY; the device never sees more than MaxInFlight requests.
func TestRequestsInFlightAreBounded(t *testing.T) {
	c, r := newClient(t, func(map[string]any) (string, bool) { return "", false }, // never answers
		mcpclient.Options{MaxInFlight: 2, MaxQueued: 3})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	errs := make(chan error, 6)
	for range 6 { // 2 in flight, 3 waiting, 1 refused
		wg.Go(func() {
			_, err := c.CallTool(ctx, "self.slow", json.RawMessage(`{}`))
			errs <- err
		})
	}
	select {
	case err := <-errs:
		if hub.ErrorCode(err) != hub.EBUSY {
			t.Fatalf("first failure %v, want EBUSY", err)
		}
	case <-time.After(10 * time.Second):
		cancel()
		t.Fatal("no call was refused")
	}
	r.mu.Lock()
	sent := len(r.sent)
	r.mu.Unlock()
	if sent > 2 {
		t.Fatalf("the device was sent %d requests, want 2 (MaxInFlight)", sent)
	}
	cancel()
	wg.Wait()
	close(errs)
	for err := range errs {
		if hub.ErrorCode(err) == hub.EBUSY {
			t.Errorf("only one call should have been refused: %v", err)
		}
	}
}
