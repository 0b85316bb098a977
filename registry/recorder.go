package registry

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/metrics"
)

// recorder persists call records and events off the call path. A bounded
// queue feeds a few workers; the store batches concurrent writes into one
// transaction. When the store falls behind, records are dropped and counted
// rather than slowing calls down.
type recorder struct {
	store Store
	log   *slog.Logger
	m     *metrics.Metrics
	queue chan func(context.Context) error
	wg    sync.WaitGroup

	mu     sync.RWMutex // guards closed against sends on a closed queue
	closed bool
}

const (
	recorderQueue   = 8192
	recorderWorkers = 16
)

func newRecorder(store Store, log *slog.Logger, m *metrics.Metrics) *recorder {
	rc := &recorder{store: store, log: log, m: m, queue: make(chan func(context.Context) error, recorderQueue)}
	rc.wg.Add(recorderWorkers)
	for range recorderWorkers {
		go rc.work()
	}
	return rc
}

func (rc *recorder) work() {
	defer rc.wg.Done()
	for op := range rc.queue {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := op(ctx); err != nil {
			rc.log.Warn("could not persist record", "err", err)
		}
		cancel()
	}
}

func (rc *recorder) enqueue(op func(context.Context) error) {
	rc.mu.RLock()
	defer rc.mu.RUnlock()
	if rc.closed { // a record produced during shutdown
		rc.m.Dropped()
		return
	}
	select {
	case rc.queue <- op:
	default:
		rc.m.Dropped()
	}
}

func (rc *recorder) call(c hub.CallRecord) {
	rc.enqueue(func(ctx context.Context) error { _, err := rc.store.AddCall(ctx, c); return err })
}

func (rc *recorder) event(ev hub.Event) {
	rc.enqueue(func(ctx context.Context) error { return rc.store.AddEvent(ctx, ev) })
}

// close flushes the queue and waits for the workers.
func (rc *recorder) close() {
	rc.mu.Lock()
	if !rc.closed {
		rc.closed = true
		close(rc.queue)
	}
	rc.mu.Unlock()
	rc.wg.Wait()
}
