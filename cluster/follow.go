package cluster

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// watched is a bucket as this node follows it: the newest revision its
// watch delivered, and how many lag checks in a row found the bucket
// ahead of it.
type watched struct {
	kv     jetstream.KeyValue
	moved  chan struct{} // watch again
	rev    atomic.Uint64
	behind int // touched by the lease loop only
}

// saw notes a revision the watch delivered (one goroutine delivers).
func (w *watched) saw(rev uint64) {
	if rev > w.rev.Load() {
		w.rev.Store(rev)
	}
}

// checkLag watches again when the bucket has been ahead of what its watch
// delivered on two checks in a row: the watch's consumer was lost with a
// NATS node (its own heartbeats would notice only much later).
func (n *Node) checkLag(ctx context.Context, w *watched) {
	st, err := w.kv.Status(ctx)
	if err != nil {
		return
	}
	bs, ok := st.(*jetstream.KeyValueBucketStatus)
	if !ok {
		return
	}
	if bs.StreamInfo().State.LastSeq <= w.rev.Load() {
		w.behind = 0
		return
	}
	if w.behind++; w.behind >= 2 {
		w.behind = 0
		n.log.Info("the watch of the shared state fell behind: watching again", "bucket", st.Bucket())
		signal(w.moved)
	}
}

// follow hands every entry of a bucket to handle, in order, until the node
// stops. When the watch ends (its consumer lost with a NATS node) or the
// connection has moved to another NATS node, it watches again from the
// start: handle skips what it has already seen, and deletions made
// meanwhile come as delete markers.
func (n *Node) follow(b *watched, w jetstream.KeyWatcher, handle func(jetstream.KeyValueEntry)) {
	for {
		if w == nil {
			var err error
			if w, err = b.kv.WatchAll(n.ctx); err != nil {
				select {
				case <-n.ctx.Done():
					return
				case <-time.After(500 * time.Millisecond):
					continue
				}
			}
		}
		n.drain(w, b, handle)
		w.Stop()
		w = nil
		if n.ctx.Err() != nil {
			return
		}
	}
}

func (n *Node) drain(w jetstream.KeyWatcher, b *watched, handle func(jetstream.KeyValueEntry)) {
	for {
		select {
		case <-n.ctx.Done():
			return
		case <-b.moved:
			return
		case e, ok := <-w.Updates():
			if !ok {
				return
			}
			if e != nil {
				b.saw(e.Revision())
				handle(e)
			}
		}
	}
}

// signal wakes a follower without blocking.
func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}
