package store

import (
	"context"
	"database/sql"
	"time"
)

// The writer connection does not checkpoint (wal_autocheckpoint=0). A
// checkpoint copies the WAL into the database file and fsyncs both; on a
// busy disk that takes tens of milliseconds or more, and done by the writer
// (SQLite's default) every queued write would wait for it. Instead the
// checkpointer goroutine runs PASSIVE checkpoints on a connection of its
// own, alongside the writer: after every checkpointEvery commits, and once
// per checkpointInterval if anything was committed. Durability does not
// depend on checkpoints: committed transactions are in the WAL.
const (
	checkpointEvery    = 64
	checkpointInterval = time.Second
)

// committed is called by the writer after each commit.
func (s *Store) committed() {
	if s.commits.Add(1)%checkpointEvery == 0 {
		select {
		case s.ckptKick <- struct{}{}:
		default: // a checkpoint is pending already
		}
	}
}

// checkpointer runs until ckptStop is closed. Failed checkpoints are
// retried at the next occasion: they cost disk space (a longer WAL), not data.
func (s *Store) checkpointer(conn *sql.Conn) {
	defer close(s.ckptDone)
	defer conn.Close()
	tick := time.NewTicker(checkpointInterval)
	defer tick.Stop()
	var done int64 // commits covered by the last checkpoint
	for {
		select {
		case <-s.ckptStop:
			return
		case <-s.ckptKick:
		case <-tick.C:
		}
		n := s.commits.Load()
		if n == done {
			continue
		}
		if _, err := conn.ExecContext(context.Background(), "PRAGMA wal_checkpoint(PASSIVE)"); err == nil {
			done = n
		}
	}
}
