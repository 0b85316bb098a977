package store_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/store"
)

// TestChattyDeviceKeepsOnlyItsOwnHistory: a device that sends many events
// keeps only its newest MaxDeviceEvents, and does not push the other
// devices' events out of the log; the total stays bounded too, also across
// reopening and deleting a device.
func TestChattyDeviceKeepsOnlyItsOwnHistory(t *testing.T) {
	ctx := context.Background()
	path := tempDB(t)
	opts := store.Options{MaxEvents: 12, MaxDeviceEvents: 5}
	s := openStore(t, path, opts)
	add := func(s *store.Store, dev string, n int) {
		t.Helper()
		es := make([]hub.Event, n)
		for i := range es {
			es[i] = hub.Event{Type: "device_message", DeviceID: dev, Data: map[string]int{"n": i}}
		}
		if err := s.AddEvents(ctx, es); err != nil {
			t.Fatal(err)
		}
	}
	count := func(s *store.Store, dev string) int {
		t.Helper()
		es, err := s.Events(ctx, dev, 1000)
		if err != nil {
			t.Fatal(err)
		}
		return len(es)
	}
	add(s, "quiet-1", 2)
	add(s, "quiet-2", 3)
	for range 40 {
		add(s, "chatty", 7)
	}
	if q1, q2, c := count(s, "quiet-1"), count(s, "quiet-2"), count(s, "chatty"); q1 != 2 || q2 != 3 || c != 5 {
		t.Errorf("events kept: quiet-1 %d, quiet-2 %d, chatty %d; want 2, 3, 5", q1, q2, c)
	}
	es, _ := s.Events(ctx, "chatty", 1)
	if string(es[0].Data.(json.RawMessage)) != `{"n":6}` {
		t.Errorf("newest event of the chatty device: %s", es[0].Data)
	}

	// Past the total: the oldest go, whichever device they belong to.
	for _, d := range []string{"d3", "d4", "d5"} {
		add(s, d, 1)
	}
	if n := count(s, ""); n != 12 {
		t.Errorf("%d events in all, want 12", n)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, path, opts)
	if err := s.DeleteDevice(ctx, "chatty"); err != nil && hub.ErrorCode(err) != hub.ENOTFOUND {
		t.Fatal(err)
	}
	for range 3 {
		add(s, "d6", 4)
	}
	if n, d6 := count(s, ""), count(s, "d6"); n != 12 || d6 != 5 {
		t.Errorf("after reopening: %d events in all (want 12), %d of d6 (want 5)", n, d6)
	}
}
