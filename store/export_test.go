package store

import (
	"context"
	"fmt"
	"time"
)

// WithBeforeBatch returns o with a hook the writer goroutine runs after it
// has taken the first operation of a batch, before draining the queue.
func WithBeforeBatch(o Options, f func()) Options {
	o.beforeBatch = f
	return o
}

// QueueLen is the number of write operations waiting for the writer.
func (s *Store) QueueLen() int { return len(s.ops) }

// Stats counts the writer's transactions.
type Stats struct {
	Batches int64 // transactions started for batches
	Retries int64 // batches that failed and were retried op by op
	Largest int64 // most operations in one batch
}

func (s *Store) Stats() Stats {
	return Stats{Batches: s.batches.Load(), Retries: s.retries.Load(), Largest: s.largest.Load()}
}

// ExecInBatch runs query as one write operation, batched like the others.
func (s *Store) ExecInBatch(ctx context.Context, query string, args ...any) error {
	return s.write(ctx, func(w *wtx) error {
		s.forgetEventCounts()
		_, err := w.exec(query, args...)
		return err
	})
}

// LimitPages caps the database's size at its current number of pages, as a
// full disk would (tests only).
func (s *Store) LimitPages(ctx context.Context) error {
	return s.write(ctx, func(w *wtx) error {
		var n int64
		if err := w.scan(`PRAGMA page_count`, nil, &n); err != nil {
			return err
		}
		_, err := w.exec(fmt.Sprintf(`PRAGMA max_page_count = %d`, n))
		return err
	})
}

// WithEventLinger returns o with events' transactions held open for d.
func WithEventLinger(o Options, d time.Duration) Options {
	o.eventLinger = d
	return o
}
