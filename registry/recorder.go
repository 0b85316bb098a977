package registry

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/metrics"
)

// recorder persists call records and events in the order they happened,
// through the store's one write queue (Store.Log): the registry keeps no
// queue or goroutine of its own, and the store's Close is the one close
// protocol that flushes them.
//
// A call waits for its record to be written before it is answered (see
// docs/api.md, "What a 200 promises"): concurrent calls share a transaction (the
// store's group commit), so this costs a call 0.1–0.3 ms, not a commit
// each. Events do not wait. When the store falls behind and its queue is
// full, or a write fails, records are dropped and counted
// (xiaozhi_hub_records_dropped_total) rather than holding calls up; a failed
// write also shows in the store's health (/healthz).
type recorder struct {
	store Store
	log   *slog.Logger
	m     *metrics.Metrics
	// warned is when a lost record was last logged (unix ns): at most one
	// warning a second, however many records a full disk loses.
	warned atomic.Int64
}

func newRecorder(store Store, log *slog.Logger, m *metrics.Metrics) *recorder {
	return &recorder{store: store, log: log, m: m}
}

// lost counts n records that were not written, and logs it now and then.
func (rc *recorder) lost(n int, what string, err error) {
	rc.m.Dropped(n)
	now := time.Now().UnixNano()
	if last := rc.warned.Load(); now-last >= int64(time.Second) && rc.warned.CompareAndSwap(last, now) {
		rc.log.Warn("could not persist "+what, "count", n, "err", err)
	}
}

// call writes c and returns once the store has committed it (or failed to,
// or dropped it), or ctx has ended.
func (rc *recorder) call(ctx context.Context, c hub.CallRecord) {
	done := make(chan struct{})
	err := rc.store.Log([]hub.CallRecord{c}, nil, func(err error) {
		if err != nil {
			rc.lost(1, "call records", err)
		}
		close(done)
	})
	if err != nil {
		rc.lost(1, "call records", err)
		return
	}
	select {
	case <-done:
	case <-ctx.Done():
	}
}

func (rc *recorder) event(e hub.Event) {
	fail := func(err error) {
		if err != nil {
			rc.lost(1, "events", err)
		}
	}
	if err := rc.store.Log(nil, []hub.Event{e}, fail); err != nil {
		fail(err)
	}
}
