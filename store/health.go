package store

import (
	"context"
	"fmt"
	"time"
)

// healthWindow is how long a failed write keeps Health failing: a disk
// that filled up, a read-only or broken file must show in /healthz, while
// reads may still work.
const healthWindow = 30 * time.Second

// writeFailure is the last write transaction that failed.
type writeFailure struct {
	err error
	at  time.Time
}

func (s *Store) writeFailed(err error) {
	s.lastFailure.Store(&writeFailure{err: err, at: time.Now()})
}

// Health reports whether the store works: it answers a read, and no write
// failed within the last 30 seconds (the error then names the failure, "database or
// disk is full", say).
func (s *Store) Health(ctx context.Context) error {
	if f := s.lastFailure.Load(); f != nil {
		if ago := time.Since(f.at); ago < healthWindow {
			return fmt.Errorf("database writes are failing (last %s ago): %w", ago.Round(time.Second), f.err)
		}
	}
	return s.Ping(ctx)
}
