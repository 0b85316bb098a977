package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// maxBatch is the most write operations committed in one transaction.
const maxBatch = 256

// eventLinger is how long the writer holds a transaction that has only
// events (Log without call records: nobody waits for them) open to more
// operations. Most of an event's cost is its commit: on a file database,
// 117 µs of CPU an event when each commits alone, 58 with three a commit,
// 30 with ten. Devices that talk spread out over time log a few events a
// turn, one at a time, and would pay a commit for each. A write somebody
// waits for (a call record, a device, a setting) ends the wait at once and
// is committed with the events gathered so far.
const eventLinger = 50 * time.Millisecond

// maxQueue is how many write operations may wait for the writer. Call
// records and events (Log) are dropped and counted beyond it rather than
// holding calls or device read loops up; other writes wait for room.
const maxQueue = 16384

// op is one write operation waiting for the writer goroutine.
type op struct {
	ctx context.Context
	fn  func(w *wtx) error // may run more than once: it must only assign its results
	// log, instead of fn: rows of the call and event logs (Log), written
	// together with those of the neighbouring log operations.
	log  *logRows
	res  error      // fn's soft error of the last run
	done chan error // buffered: receives exactly one result (fn operations)
	// finish, for log operations, receives the result instead of done.
	finish func(error)
	// after, if set, runs once the operation is over (committed, failed or
	// dropped), before its result is handed over: see writeAnd.
	after func()
	// lazy: nobody waits for the operation (Log of events only): its batch
	// may wait for others (eventLinger).
	lazy bool
}

// complete hands o its result.
func (o *op) complete(err error) {
	if o.after != nil {
		o.after()
	}
	switch {
	case o.log == nil:
		o.done <- err
	case o.finish != nil:
		o.finish(err)
	}
}

// softError is an outcome of an operation that wrote nothing and therefore
// need not abort the batch it is part of (a device not found, say).
type softError struct{ err error }

func (e *softError) Error() string { return e.err.Error() }

func soft(err error) error { return &softError{err} }

// wtx runs statements on the write connection inside the current batch.
type wtx struct{ s *Store }

func (w *wtx) exec(query string, args ...any) (sql.Result, error) {
	st, err := w.s.stmt(query)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(context.Background(), args...)
}

// scan runs a query returning at most one row and scans it into dest;
// sql.ErrNoRows when there is none.
func (w *wtx) scan(query string, args []any, dest ...any) error {
	st, err := w.s.stmt(query)
	if err != nil {
		return err
	}
	return st.QueryRowContext(context.Background(), args...).Scan(dest...)
}

// stmt returns the prepared statement for query on the write connection.
// Only the writer goroutine calls it.
func (s *Store) stmt(query string) (*sql.Stmt, error) {
	if st, ok := s.stmts[query]; ok {
		return st, nil
	}
	st, err := s.conn.PrepareContext(context.Background(), query)
	if err != nil {
		return nil, err
	}
	s.stmts[query] = st
	return st, nil
}

// write queues fn and waits until the transaction running it has committed,
// or until ctx ends. An operation whose ctx has ended before the writer gets
// to it is skipped; once started it runs to completion with its batch (a few
// microseconds), so a caller that gave up may still find its write applied.
func (s *Store) write(ctx context.Context, fn func(w *wtx) error) error {
	return s.writeAnd(ctx, fn, nil)
}

// writeAnd is write with after run by the writer once the operation is
// over, even when the caller stopped waiting for it (ctx ended): the caches
// (cache.go) forget a row only once the file holds what replaces it. after
// does not run for an operation that was never queued.
func (s *Store) writeAnd(ctx context.Context, fn func(w *wtx) error, after func()) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	o := &op{ctx: ctx, fn: fn, done: make(chan error, 1), after: after}
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return ErrClosed
	}
	select {
	case s.ops <- o:
		s.mu.RUnlock()
	case <-ctx.Done():
		s.mu.RUnlock()
		return ctx.Err()
	}
	select {
	case err := <-o.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// run is the writer goroutine: it takes the first queued operation, adds
// whatever else is queued (up to maxBatch) and commits them together. It
// returns when ops is closed and drained.
func (s *Store) run() {
	defer close(s.done)
	batch := make([]*op, 0, maxBatch)
	linger := time.NewTimer(time.Hour)
	linger.Stop()
	for o := range s.ops {
		batch = append(batch[:0], o)
		if s.opts.beforeBatch != nil {
			s.opts.beforeBatch()
		}
		batch = s.gather(batch, linger)
		s.runBatch(batch)
		clear(batch)
	}
}

// gather adds the queued operations to batch, up to maxBatch. While every
// operation in it is lazy it also waits for more, up to the linger (the
// timer, stopped on return): the first one somebody waits for, or the
// queue's closing, ends the wait.
func (s *Store) gather(batch []*op, linger *time.Timer) []*op {
	lazy := batch[0].lazy
	armed := false
	defer func() {
		if armed {
			linger.Stop()
		}
	}()
	for len(batch) < maxBatch {
		var o *op
		var ok bool
		select {
		case o, ok = <-s.ops:
		default:
			if !lazy {
				return batch
			}
			if !armed {
				linger.Reset(s.opts.eventLinger)
				armed = true
			}
			select {
			case o, ok = <-s.ops:
			case <-linger.C:
				armed = false
				return batch
			}
		}
		if !ok {
			return batch
		}
		batch = append(batch, o)
		lazy = lazy && o.lazy
	}
	return batch
}

// runBatch commits the live operations of batch in one transaction. If that
// fails, it retries them one by one so that each caller gets its own result
// and a bad operation does not take the good ones down with it.
func (s *Store) runBatch(batch []*op) {
	live := batch[:0]
	for _, o := range batch {
		if err := o.ctx.Err(); err != nil {
			o.complete(err)
			continue
		}
		live = append(live, o)
	}
	if len(live) == 0 {
		return
	}
	s.batches.Add(1)
	if n := int64(len(live)); n > s.largest.Load() {
		s.largest.Store(n)
	}
	err := s.runTx(live)
	if err != nil {
		s.writeFailed(err)
	}
	var be *beginError
	switch {
	case err == nil:
		for _, o := range live {
			o.complete(o.res)
		}
		return
	case len(live) == 1 || errors.As(err, &be):
		// Not starting a transaction (the file is locked by another
		// process beyond busy_timeout, say) is nobody's fault in
		// particular: retrying op by op would only wait again each time.
		for _, o := range live {
			o.complete(err)
		}
		return
	}
	s.retries.Add(1)
	for _, o := range live {
		if err := o.ctx.Err(); err != nil {
			o.complete(err)
			continue
		}
		if err := s.runTx([]*op{o}); err != nil {
			s.writeFailed(err)
			o.complete(err)
			continue
		}
		o.complete(o.res)
	}
}

// beginError is a failure to start a write transaction.
type beginError struct{ err error }

func (e *beginError) Error() string { return "begin transaction: " + e.err.Error() }
func (e *beginError) Unwrap() error { return e.err }

// runTx runs ops in one transaction on the write connection.
func (s *Store) runTx(ops []*op) error {
	bg := context.Background()
	if _, err := s.conn.ExecContext(bg, "BEGIN IMMEDIATE"); err != nil {
		s.rollback()
		return &beginError{err}
	}
	w := &wtx{s}
	for i := 0; i < len(ops); i++ {
		o := ops[i]
		o.res = nil
		if o.log != nil {
			j := i + 1
			for j < len(ops) && ops[j].log != nil {
				j++
			}
			if err := s.runLogs(w, ops[i:j]); err != nil {
				s.rollback()
				return err
			}
			i = j - 1
			continue
		}
		if err := o.fn(w); err != nil {
			var se *softError
			if errors.As(err, &se) {
				o.res = se.err
				continue
			}
			s.rollback()
			return err
		}
	}
	if _, err := s.conn.ExecContext(bg, "COMMIT"); err != nil {
		s.rollback()
		return fmt.Errorf("commit: %w", err)
	}
	s.committed()
	return nil
}

// rollback ends the open transaction, if any. Its error is of no interest:
// SQLite may already have rolled back (after an I/O error, for instance).
func (s *Store) rollback() {
	s.forgetEventCounts() // they may count rows that are now gone
	_, _ = s.conn.ExecContext(context.Background(), "ROLLBACK")
}
