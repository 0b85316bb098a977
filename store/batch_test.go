package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/store"
)

func TestConcurrentWritesAllLand(t *testing.T) {
	ctx := context.Background()
	path := tempDB(t)
	s := openStore(t, path, store.Options{})
	const n = 200
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			id := fmt.Sprintf("dev-%03d", i)
			h, tools := toolList(i % 4)
			d := fullDevice(id)
			if err := s.SaveDevice(ctx, d); err != nil {
				errs <- err
				return
			}
			if err := s.SaveTools(ctx, id, h, tools); err != nil {
				errs <- err
				return
			}
			if err := s.SaveThing(ctx, id, sampleThing("Lamp")); err != nil {
				errs <- err
				return
			}
			if _, err := s.AddCall(ctx, hub.CallRecord{DeviceID: id, Tool: "t"}); err != nil {
				errs <- err
				return
			}
			errs <- s.AddEvent(ctx, hub.Event{Type: hub.EventOnline, DeviceID: id})
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	got := loadAll(t, s)
	if len(got) != n {
		t.Fatalf("LoadAll: %d devices, want %d", len(got), n)
	}
	for i := range n {
		id := fmt.Sprintf("dev-%03d", i)
		h, tools := toolList(i % 4)
		if sn := got[id]; sn.ToolsHash != h || len(sn.Tools) != len(tools) || len(sn.Things) != 1 {
			t.Fatalf("%s: %+v", id, sn)
		}
	}
	calls, _ := s.Calls(ctx, hub.CallFilter{Limit: 1000})
	events, _ := s.Events(ctx, "", 1000)
	if len(calls) != n || len(events) != n {
		t.Fatalf("%d calls, %d events, want %d each", len(calls), len(events), n)
	}
	if c := countRows(t, path, "tool_sets"); c != 4 {
		t.Errorf("%d tool sets, want 4", c)
	}
	st := s.Stats()
	t.Logf("%d writes in %d transactions, largest batch %d", 5*n, st.Batches, st.Largest)
}

// pausedStore returns a store whose writer holds its first batch until
// release is called, so that the test can queue operations into that batch.
func pausedStore(t *testing.T, path string) (s *store.Store, entered <-chan struct{}, release func()) {
	in, out := make(chan struct{}), make(chan struct{})
	var once sync.Once
	opts := store.WithBeforeBatch(store.Options{}, func() {
		once.Do(func() {
			close(in)
			<-out
		})
	})
	s = openStore(t, path, opts)
	var rel sync.Once
	release = func() { rel.Do(func() { close(out) }) }
	t.Cleanup(release) // before Close (cleanups run last-in first-out)
	return s, in, release
}

// waitQueued waits until n operations are queued for the writer.
func waitQueued(t *testing.T, s *store.Store, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for s.QueueLen() < n {
		if time.Now().After(deadline) {
			t.Fatalf("queued %d operations, want %d", s.QueueLen(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// A batch with failing and cancelled operations commits the good ones, and
// each caller gets its own result.
func TestBatchFailureIsolated(t *testing.T) {
	ctx := context.Background()
	s, entered, release := pausedStore(t, tempDB(t))

	type result struct {
		id  string
		err error
	}
	results := make(chan result, 100)
	save := func(ctx context.Context, d hub.Device) {
		results <- result{d.ID, s.SaveDevice(ctx, d)}
	}
	go save(ctx, hub.Device{ID: "first"})
	<-entered

	const good, bad = 40, 6
	for i := range good {
		go save(ctx, hub.Device{ID: fmt.Sprintf("good-%02d", i)})
	}
	for i := range bad / 2 {
		// A constraint failure inside the transaction (CHECK id <> '').
		go func() {
			results <- result{fmt.Sprintf("bad-sql-%d", i), s.ExecInBatch(ctx, `INSERT INTO devices (id) VALUES ('')`)}
		}()
		// A new tool list that cannot be encoded (encoded in the writer).
		go func() {
			id := fmt.Sprintf("bad-tools-%d", i)
			tools := []hub.Tool{{Name: "x", InputSchema: json.RawMessage(`{bad`)}}
			results <- result{id, s.SaveTools(ctx, id, "hash-"+id, tools)}
		}()
	}
	waitQueued(t, s, good+bad)
	cctx, cancel := context.WithCancel(ctx)
	go save(cctx, hub.Device{ID: "cancelled"})
	waitQueued(t, s, good+bad+1)
	cancel()
	if r := <-results; r.id != "cancelled" || !errors.Is(r.err, context.Canceled) {
		t.Fatalf("cancelled caller got %+v, want context.Canceled", r)
	}
	release()

	for range 1 + good + bad {
		r := <-results
		switch {
		case strings.HasPrefix(r.id, "bad-sql-"):
			if r.err == nil || !strings.Contains(r.err.Error(), "CHECK constraint failed") {
				t.Errorf("%s: %v, want a CHECK constraint error", r.id, r.err)
			}
		case strings.HasPrefix(r.id, "bad-tools-"):
			if r.err == nil || !strings.Contains(r.err.Error(), "save tools for "+r.id+": encode tools") {
				t.Errorf("%s: %v, want a wrapped encoding error", r.id, r.err)
			}
		case r.err != nil:
			t.Errorf("%s: %v", r.id, r.err)
		}
	}
	got := loadAll(t, s)
	if len(got) != 1+good {
		t.Errorf("stored %d devices, want %d", len(got), 1+good)
	}
	for id := range got {
		if strings.HasPrefix(id, "bad-") || id == "cancelled" {
			t.Errorf("%s was stored", id)
		}
	}
	if st := s.Stats(); st.Retries != 1 || st.Largest != 1+good+bad {
		t.Errorf("stats %+v, want one retried batch of %d", st, 1+good+bad)
	}
}

// A not-found outcome does not abort the batch it is part of.
func TestNotFoundDoesNotAbortBatch(t *testing.T) {
	ctx := context.Background()
	s, entered, release := pausedStore(t, tempDB(t))
	errs := make(chan error, 3)
	go func() { errs <- s.SaveDevice(ctx, hub.Device{ID: "a"}) }()
	<-entered
	go func() { errs <- s.DeleteDevice(ctx, "nobody") }()
	waitQueued(t, s, 1)
	go func() { errs <- s.SaveDevice(ctx, hub.Device{ID: "b"}) }()
	waitQueued(t, s, 2)
	release()
	var notFound int
	for range 3 {
		err := <-errs
		switch hub.ErrorCode(err) {
		case "":
		case hub.ENOTFOUND:
			notFound++
		default:
			t.Errorf("unexpected error %v", err)
		}
	}
	if notFound != 1 || len(loadAll(t, s)) != 2 {
		t.Errorf("notFound=%d devices=%d", notFound, len(loadAll(t, s)))
	}
	if st := s.Stats(); st.Retries != 0 || st.Batches != 1 {
		t.Errorf("stats %+v, want one batch, no retry", st)
	}
}
