package registry

import (
	"context"
	"sync"
	"time"
)

// maxWriters bounds the goroutines that write devices' queued writes to
// the store. A connect storm queues a write for every device at once: with
// a goroutine per device waiting for SQLite, the runtime kept the
// descriptors of all of them (and holes in its stack spans) long after the
// storm. The store commits the writes waiting at the same time together
// (up to 256 in a transaction), so a few dozen writers keep its
// transactions large enough (128 cost a listening device about 1 KB more
// at 8,000, in their stacks' holes, for no CPU that could be told apart).
const maxWriters = 32

// writeQueue runs one device's store writes one after another, in the
// order they were asked for, on a writer the Registry owns (see bgWrites).
// It lets the hub answer the device first and persist after (memory first,
// the write in the background), without reordering the device's writes.
type writeQueue struct {
	mu         sync.Mutex
	ops        []func()
	busy       bool // waiting for a writer, drained by one, or an inline write (see write) is running
	devicePend bool // a device-row save is queued and not yet started
}

// bgWrites owns the writers that drain the devices' queues: at most
// maxWriters goroutines, started when a queue is waiting and none is
// free, each ending when no queue waits. A device's queue waits in ready
// (first come, first written) while every writer is busy; one writer at
// a time drains it, so the device's writes keep their order.
type bgWrites struct {
	mu      sync.Mutex
	closed  bool
	ready   []*writeQueue // queues waiting for a writer, oldest first
	writers int           // writer goroutines running
	wg      sync.WaitGroup
}

// wait ends background writing: writes queued from now on run on the
// caller's goroutine. It returns when every queued write has run.
func (b *bgWrites) wait() {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	b.wg.Wait()
}

// enqueue queues op after the device's earlier writes.
func (l *Link) enqueue(op func()) {
	q := &l.e.writes
	q.mu.Lock()
	q.ops = append(q.ops, op)
	if q.busy {
		q.mu.Unlock()
		return
	}
	q.busy = true
	q.mu.Unlock()
	l.r.bg.schedule(q)
}

// schedule hands q (marked busy by the caller) to a writer, starting one
// if fewer than maxWriters run, or drains it on this goroutine once the
// registry closes.
func (b *bgWrites) schedule(q *writeQueue) {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		q.drain() // the registry is closing: write now, on this goroutine
		return
	}
	b.ready = append(b.ready, q)
	if b.writers >= maxWriters {
		b.mu.Unlock()
		return
	}
	b.writers++
	b.wg.Add(1)
	b.mu.Unlock()
	go b.writer()
}

// writer drains waiting queues until none waits.
func (b *bgWrites) writer() {
	defer b.wg.Done()
	for {
		b.mu.Lock()
		q, ok := popFront(&b.ready)
		if !ok {
			b.writers--
		}
		b.mu.Unlock()
		if !ok {
			return
		}
		q.drain()
	}
}

func (q *writeQueue) drain() {
	for {
		q.mu.Lock()
		op, ok := popFront(&q.ops)
		if !ok {
			q.busy = false
		}
		q.mu.Unlock()
		if !ok {
			return
		}
		op()
	}
}

// popFront takes the first element of *s, or reports false when there is
// none; an emptied slice is released (a storm's backlog goes with it).
func popFront[T any](s *[]T) (T, bool) {
	var zero T
	if len(*s) == 0 {
		*s = nil
		return zero, false
	}
	v := (*s)[0]
	(*s)[0] = zero
	*s = (*s)[1:]
	return v, true
}

// write runs op after the device's queued writes and returns its error.
// When nothing is queued it runs on the caller's goroutine.
func (l *Link) write(op func() error) error {
	q := &l.e.writes
	q.mu.Lock()
	if !q.busy {
		q.busy = true
		q.mu.Unlock()
		err := l.writeNow(op)
		q.mu.Lock()
		if len(q.ops) == 0 {
			q.busy = false
			q.mu.Unlock()
			return err
		}
		q.mu.Unlock()
		l.r.bg.schedule(q) // writes queued meanwhile
		return err
	}
	q.mu.Unlock()
	done := make(chan error, 1)
	l.enqueue(func() { done <- l.writeNow(op) })
	return <-done
}

// saveLater persists the device row in the background, after the device's
// earlier writes. A save already queued and not yet started covers it (it
// writes the newest state when it runs). Failures are logged.
func (l *Link) saveLater() {
	q := &l.e.writes
	q.mu.Lock()
	if q.devicePend {
		q.mu.Unlock()
		return
	}
	q.devicePend = true
	q.mu.Unlock()
	l.writeLater("device", func(ctx context.Context) error {
		q.mu.Lock()
		q.devicePend = false
		q.mu.Unlock()
		return l.storeDevice(ctx)
	}, nil)
}

// writeLater queues op (a store write of the device's what) after the
// device's earlier writes, with a bound of its own; then, if op
// succeeded (or the device was deleted meanwhile, which skips it), runs
// after. A failure is logged.
func (l *Link) writeLater(what string, op func(context.Context) error, after func()) {
	l.enqueue(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := l.writeNow(func() error { return op(ctx) }); err != nil {
			l.r.log.Error("could not persist "+what, "device", l.id, "err", err)
			return
		}
		if after != nil {
			after()
		}
	})
}
