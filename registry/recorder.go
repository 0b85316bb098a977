package registry

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/metrics"
)

// recorder persists call records and events off the call path, in the order
// they happened. One goroutine drains a bounded queue and writes whatever has
// accumulated as one batch per table, so a busy hub writes large batches and
// an idle one writes at once. While busy (the last write ended less than
// recorderBusy ago) it also waits up to recorderLinger for a batch to fill:
// a transaction costs as much as a few dozen records (every page it touches
// is written to the WAL), so at a few thousand calls per second small
// batches would cost more than the calls. When the store falls behind and
// the queue is full, records are dropped and counted rather than slowing
// calls down.
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
}

const (
	recorderQueue = 16384
	recorderBatch = 1024
	// recorderFull is a batch that is written without lingering.
	recorderFull   = 256
	recorderBusy   = 10 * time.Millisecond
	recorderLinger = 2 * time.Millisecond
)

func newRecorder(store Store, log *slog.Logger, m *metrics.Metrics) *recorder {
	rc := &recorder{store: store, log: log, m: m, queue: make(chan record, recorderQueue), done: make(chan struct{})}
	go rc.run()
	return rc
}

func (rc *recorder) run() {
	defer close(rc.done)
	var calls []hub.CallRecord
	var events []hub.Event
	var lastWrite time.Time
	linger := time.NewTimer(time.Hour)
	linger.Stop()
	for first := range rc.queue {
		calls, events = calls[:0], events[:0]
		add := func(r record) {
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
		if n := len(calls) + len(events); n < recorderFull && time.Since(lastWrite) < recorderBusy {
			linger.Reset(recorderLinger)
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
		if err := rc.store.AddEvents(ctx, events); err != nil {
			rc.m.Dropped(len(events))
			rc.log.Warn("could not persist events", "count", len(events), "err", err)
		}
		cancel()
		lastWrite = time.Now()
	}
}

func (rc *recorder) enqueue(r record) {
	rc.mu.RLock()
	defer rc.mu.RUnlock()
	if rc.closed { // a record produced during shutdown
		rc.m.Dropped(1)
		return
	}
	select {
	case rc.queue <- r:
	default:
		rc.m.Dropped(1)
	}
}

func (rc *recorder) call(c hub.CallRecord) { rc.enqueue(record{call: &c}) }
func (rc *recorder) event(e hub.Event)     { rc.enqueue(record{event: &e}) }

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
