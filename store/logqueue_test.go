package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/store"
)

// TestLogBatchesInOrder: records queued by many Log calls while the writer
// is busy are committed together, in order, each caller told once; a
// failing log write reaches its callers and Health; after Close, Log
// refuses at once.
func TestLogBatchesInOrder(t *testing.T) {
	ctx := context.Background()
	gate := make(chan struct{})
	first := true
	s := openStore(t, tempDB(t), store.WithBeforeBatch(store.Options{}, func() {
		if first { // hold the first batch until everything is queued
			first = false
			<-gate
		}
	}))
	const n = 100
	results := make(chan error, 2*n)
	for i := range n {
		c := hub.CallRecord{ID: int64(i + 1), DeviceID: "d1", Kind: "mcp", Tool: fmt.Sprint("t", i), Outcome: hub.OutcomeOK}
		e := hub.Event{Type: "listen", DeviceID: "d1", Data: map[string]int{"i": i}}
		if err := s.Log([]hub.CallRecord{c}, nil, func(err error) { results <- err }); err != nil {
			t.Fatal(err)
		}
		if err := s.Log(nil, []hub.Event{e}, func(err error) { results <- err }); err != nil {
			t.Fatal(err)
		}
	}
	close(gate)
	for range 2 * n {
		if err := <-results; err != nil {
			t.Fatalf("log write: %v", err)
		}
	}
	calls, err := s.Calls(ctx, hub.CallFilter{Limit: n})
	if err != nil || len(calls) != n {
		t.Fatalf("%d calls, %v", len(calls), err)
	}
	for i, c := range calls {
		if c.ID != int64(n-i) || c.Tool != fmt.Sprint("t", n-i-1) {
			t.Fatalf("call %d is %d %s, want them in order", i, c.ID, c.Tool)
		}
	}
	events, err := s.Events(ctx, "d1", n)
	if err != nil || len(events) != n || !strings.Contains(string(events[0].Data.(json.RawMessage)), fmt.Sprint(n-1)) {
		t.Fatalf("%d events, newest %v, %v", len(events), events[0].Data, err)
	}
	if st := s.Stats(); st.Batches > 3 {
		t.Errorf("%d transactions for %d queued records, want them batched", st.Batches, 2*n)
	}

	if err := s.LimitPages(ctx); err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("x", 64<<10)
	var werr error
	for i := 0; i < 100 && werr == nil; i++ {
		done := make(chan error, 1)
		c := hub.CallRecord{DeviceID: "d1", Kind: "mcp", Tool: "t", Result: big, Outcome: hub.OutcomeOK}
		if err := s.Log([]hub.CallRecord{c}, nil, func(err error) { done <- err }); err != nil {
			t.Fatal(err)
		}
		werr = <-done
	}
	if werr == nil {
		t.Fatal("log writes never failed on a full database")
	}
	if err := s.Health(ctx); err == nil {
		t.Error("Health is fine after a failed log write")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Log(nil, []hub.Event{{Type: "x"}}, func(error) { t.Error("done called for a refused record") }); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Log after Close: %v, want ErrClosed", err)
	}
}

// Events logged one at a time, as devices that talk spread out over time
// log them, share a commit; a write somebody waits for (a call record, a
// device) is not held up by them, nor is Close. The linger is an hour
// here: any of those waiting for it would time the test out.
func TestEventsShareACommit(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, tempDB(t), store.WithEventLinger(store.Options{}, time.Hour))
	logged := make(chan error, 10)
	logEvent := func(i int) {
		t.Helper()
		e := hub.Event{Type: hub.EventDeviceMessage, DeviceID: "d1", Data: map[string]int{"i": i}}
		if err := s.Log(nil, []hub.Event{e}, func(err error) { logged <- err }); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 5 {
		logEvent(i)
		if i == 0 {
			for s.QueueLen() > 0 { // the writer has taken the first and waits for more
				runtime.Gosched()
			}
		}
	}
	select {
	case err := <-logged:
		t.Fatalf("an event was committed (%v) while its transaction should be waiting for more", err)
	default:
	}
	// A call record's caller waits for its commit: it ends the linger.
	callDone := make(chan error, 1)
	c := hub.CallRecord{ID: 1, DeviceID: "d1", Kind: "mcp", Tool: "t", Outcome: hub.OutcomeOK}
	if err := s.Log([]hub.CallRecord{c}, nil, func(err error) { callDone <- err }); err != nil {
		t.Fatal(err)
	}
	if err := <-callDone; err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if err := <-logged; err != nil {
			t.Fatal(err)
		}
	}
	if st := s.Stats(); st.Batches != 1 {
		t.Errorf("%d transactions for 5 events and a call record, want 1", st.Batches)
	}
	if evs, err := s.Events(ctx, "d1", 10); err != nil || len(evs) != 5 {
		t.Fatalf("%d events stored, %v", len(evs), err)
	}

	// A write through write() (a device) ends it as well.
	logEvent(5)
	if err := s.SaveDevice(ctx, hub.Device{ID: "d2"}); err != nil {
		t.Fatal(err)
	}
	if err := <-logged; err != nil {
		t.Fatal(err)
	}
	// And Close commits what is lingering rather than waiting.
	logEvent(6)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-logged; err != nil {
		t.Fatalf("the event lingering at Close: %v", err)
	}
}
