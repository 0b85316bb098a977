package registry

import (
	"context"
	"sync"
	"time"
)

// writeQueue runs one device's store writes one after another, in the
// order they were asked for, on a goroutine the Registry owns (started
// when the first write is queued and ended when the queue is empty). It
// lets the hub answer the device first and persist after (memory first,
// the write in the background), without reordering the device's writes.
type writeQueue struct {
	mu         sync.Mutex
	ops        []func()
	busy       bool // a drainer or an inline write (see write) is running
	devicePend bool // a device-row save is queued and not yet started
}

// bgWrites owns the drainers of every device's writeQueue.
type bgWrites struct {
	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup
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
	l.startDrainer()
}

// startDrainer drains the device's queue (marked busy by the caller) on
// a goroutine the Registry owns, or on this one once the registry closes.
func (l *Link) startDrainer() {
	q := &l.e.writes
	b := &l.r.bg
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		q.drain() // the registry is closing: write now, on this goroutine
		return
	}
	b.wg.Add(1)
	b.mu.Unlock()
	go func() {
		defer b.wg.Done()
		q.drain()
	}()
}

func (q *writeQueue) drain() {
	for {
		q.mu.Lock()
		if len(q.ops) == 0 {
			q.busy = false
			q.ops = nil
			q.mu.Unlock()
			return
		}
		op := q.ops[0]
		q.ops[0] = nil
		q.ops = q.ops[1:]
		q.mu.Unlock()
		op()
	}
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
		l.startDrainer() // writes queued meanwhile
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
	l.enqueue(func() {
		q.mu.Lock()
		q.devicePend = false
		q.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := l.writeNow(func() error { return l.storeDevice(ctx) }); err != nil {
			l.r.log.Error("could not persist device", "device", l.id, "err", err)
		}
	})
}
