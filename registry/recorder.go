package registry

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/metrics"
)

// recorder persists call records and events in the order they happened. One
// goroutine drains a bounded queue and writes whatever has accumulated as
// one batch per table, so a busy hub writes large batches and an idle one
// writes at once.
//
// A call waits for its record to be written before it is answered (see
// README, "What a 200 promises"): concurrent calls share a transaction, so
// this costs a call 0.1–0.3 ms, not a commit each. While busy (the last
// write ended less than recorderBusy ago) the writer waits for a batch to
// fill: up to recorderLinger when only events are queued, recorderLingerCalls
// when calls wait and the last batch had several (never for a lone caller).
// A transaction costs as much as a few dozen records (every page it touches
// is written to the WAL). When the store falls behind and the queue
// is full, or a write fails, records are dropped and counted
// (xiaozhi_hub_records_dropped_total) rather than holding calls up.
type recorder struct {
	store Store
	log   *slog.Logger
	m     *metrics.Metrics
	queue chan record
	done  chan struct{}

	mu     sync.RWMutex // guards closed against sends on a closed queue
	closed bool
}

// record is a call or an event.
type record struct {
	call  *hub.CallRecord
	event *hub.Event
	done  chan struct{} // closed once a call's record is written (or not)
}

const (
	recorderQueue = 16384
	recorderBatch = 1024
	// recorderFull is a batch that is written without lingering.
	recorderFull   = 256
	recorderBusy   = 10 * time.Millisecond
	recorderLinger = 2 * time.Millisecond
	// recorderLingerCalls is the wait when a call waits for the batch.
	recorderLingerCalls = 200 * time.Microsecond
)

func newRecorder(store Store, log *slog.Logger, m *metrics.Metrics) *recorder {
	rc := &recorder{store: store, log: log, m: m, queue: make(chan record, recorderQueue), done: make(chan struct{})}
	return rc // Registry.Load starts rc.run
}

func (rc *recorder) run() {
	defer close(rc.done)
	var calls []hub.CallRecord
	var events []hub.Event
	var waiters []chan struct{}
	var lastWaiters int // in the previous batch
	var lastWrite time.Time
	linger := time.NewTimer(time.Hour)
	linger.Stop()
	for first := range rc.queue {
		calls, events, waiters = calls[:0], events[:0], waiters[:0]
		add := func(r record) {
			if r.done != nil {
				waiters = append(waiters, r.done)
			}
			if r.call != nil {
				calls = append(calls, *r.call)
			} else {
				events = append(events, *r.event)
			}
		}
		add(first)
	drain:
		for len(calls)+len(events) < recorderBatch {
			select {
			case r, ok := <-rc.queue:
				if !ok {
					break drain
				}
				add(r)
			default:
				break drain
			}
		}
		wait := recorderLinger
		if len(waiters) > 0 {
			// A caller waits: linger only if others are calling too (the
			// last batch had several), never for a lone caller.
			wait = 0
			if lastWaiters > 1 {
				wait = recorderLingerCalls
			}
		}
		if n := len(calls) + len(events); n < recorderFull && time.Since(lastWrite) < recorderBusy && wait > 0 {
			linger.Reset(wait)
		fill:
			for len(calls)+len(events) < recorderBatch {
				select {
				case r, ok := <-rc.queue:
					if !ok {
						break fill
					}
					add(r)
				case <-linger.C:
					break fill
				}
			}
			linger.Stop()
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if err := rc.store.AddCalls(ctx, calls); err != nil {
			rc.m.Dropped(len(calls))
			rc.log.Warn("could not persist call records", "count", len(calls), "err", err)
		}
		for _, w := range waiters {
			close(w)
		}
		lastWaiters = len(waiters)
		clear(waiters)
		if err := rc.store.AddEvents(ctx, events); err != nil {
			rc.m.Dropped(len(events))
			rc.log.Warn("could not persist events", "count", len(events), "err", err)
		}
		cancel()
		lastWrite = time.Now()
	}
}

// enqueue queues r, or drops and counts it; it reports whether r was queued.
func (rc *recorder) enqueue(r record) bool {
	rc.mu.RLock()
	defer rc.mu.RUnlock()
	if rc.closed { // a record produced during shutdown
		rc.m.Dropped(1)
		return false
	}
	select {
	case rc.queue <- r:
		return true
	default:
		rc.m.Dropped(1)
		return false
	}
}

// call writes c and returns once the store has committed it (or failed to,
// or dropped it), or ctx has ended.
func (rc *recorder) call(ctx context.Context, c hub.CallRecord) {
	done := make(chan struct{})
	if !rc.enqueue(record{call: &c, done: done}) {
		return
	}
	select {
	case <-done:
	case <-ctx.Done():
	}
}

func (rc *recorder) event(e hub.Event) { rc.enqueue(record{event: &e}) }

// close flushes the queue and waits for the writer.
func (rc *recorder) close() {
	rc.mu.Lock()
	if !rc.closed {
		rc.closed = true
		close(rc.queue)
	}
	rc.mu.Unlock()
	<-rc.done
}
