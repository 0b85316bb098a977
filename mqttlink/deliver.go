package mqttlink

import (
	"time"

	"github.com/xiaozhi-hub/hub/session"
	"github.com/xiaozhi-hub/hub/udpaudio"
)

// How a device's messages reach its session. No goroutine reads an idle
// device's connection: Link.Message hands each message to the session's
// Inbox on the bus's goroutine (the broker's reader of the connection).
// Messages wait in the connection's queue only when something else hands
// them on, in order:
//
//   - while a conversation is open, its pump: one goroutine per
//     conversation takes both its UDP audio and the device's messages in
//     the order they reached the hub (each is stamped when it arrives), so
//     that a listen stop sent after the last audio is not handled ahead of
//     it, nor a listen start behind the first;
//   - Offer's messages (an external broker: one slow session must not hold
//     up the others), and those that came before the session started, by a
//     drain goroutine that ends when the queue is empty.
//
// The queue holds at most QueueLen messages: Message waits for room (the
// broker reads that device's connection no further meanwhile), Offer
// drops the message.

// start hands the connection to its session: what waits is passed on, and
// a connection that ended meanwhile ends the session.
func (c *conn) start(in session.Inbox) {
	c.mu.Lock()
	c.inbox = in
	over, reason := c.over, c.reason
	handOn := c.handOnLocked()
	c.mu.Unlock()
	if over {
		in.End(reason)
		return
	}
	handOn()
}

// queued is a message waiting for the session, with when it arrived.
type queued struct {
	payload []byte
	arrived time.Time
}

// deliver hands a message to the session on the caller's goroutine, or
// queues it behind those that wait.
func (c *conn) deliver(payload []byte) {
	arrived := time.Now()
	c.mu.Lock()
	c.touchLocked()
	for !c.over && len(c.queue) >= c.l.opts.QueueLen {
		c.room.Wait()
	}
	if c.over {
		c.mu.Unlock()
		return
	}
	in := c.inbox
	if in == nil || c.draining || c.pumper != nil || len(c.queue) > 0 {
		c.queue = append(c.queue, queued{payload, arrived})
		handOn := c.handOnLocked()
		c.mu.Unlock()
		handOn()
		return
	}
	c.mu.Unlock()
	in.Receive(text(payload))
}

// offer queues a message for the session without waiting; false when
// QueueLen messages wait already (the message is dropped).
func (c *conn) offer(payload []byte) bool {
	arrived := time.Now()
	c.mu.Lock()
	c.touchLocked()
	if c.over || len(c.queue) >= c.l.opts.QueueLen {
		c.mu.Unlock()
		return false
	}
	c.queue = append(c.queue, queued{payload, arrived})
	handOn := c.handOnLocked()
	c.mu.Unlock()
	handOn()
	return true
}

// handOnLocked makes sure the queued messages are handed on: it returns
// what to do once mu is released (wake the pump, start a drain goroutine,
// or nothing).
func (c *conn) handOnLocked() func() {
	switch {
	case len(c.queue) == 0 || c.inbox == nil || c.over || c.draining:
		return func() {}
	case c.pumper != nil:
		wake := c.wake
		return func() { signal(wake) }
	}
	c.draining = true
	return func() { c.l.wg.Go(c.drain) }
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// popLocked takes the oldest queued message.
func (c *conn) popLocked() []byte {
	p := c.queue[0].payload
	c.queue[0] = queued{}
	c.queue = c.queue[1:]
	if len(c.queue) == 0 {
		c.queue = nil
	}
	c.room.Broadcast()
	return p
}

// drain hands the queued messages to the session, in order, and ends when
// none is left, when the connection ended, or when a conversation's pump
// takes over (the session handled a hello).
func (c *conn) drain() {
	for {
		c.mu.Lock()
		if len(c.queue) == 0 || c.over || c.pumper != nil {
			c.draining = false
			handOn := c.handOnLocked()
			c.mu.Unlock()
			handOn()
			return
		}
		p, in := c.popLocked(), c.inbox
		c.mu.Unlock()
		in.Receive(text(p))
	}
}

// pump hands the conversation's audio and the device's queued messages to
// the session, in the order they reached the hub, until the conversation's
// UDP channel closes: by the session (a goodbye, a newer hello, the end of
// the connection), or on its own (see audioEnded). The messages still
// waiting then are handed on from here, and the device's next messages go
// to the session directly again.
func (c *conn) pump(a *udpaudio.Session, in session.Inbox, wake <-chan struct{}) {
	frames := a.Frames()
	var held *udpaudio.Frame // taken from frames, not yet handed on
	take := func(f udpaudio.Frame, ok bool) {
		if !ok {
			frames = nil
			return
		}
		held = &f
	}
	for frames != nil || held != nil {
		if held == nil {
			// A frame already waiting is taken before the messages: it
			// may have come first.
			select {
			case f, ok := <-frames:
				take(f, ok)
			default:
				select {
				case f, ok := <-frames:
					take(f, ok)
				case <-wake:
				}
			}
		}
		c.handQueued(a, in, held)
		if held != nil {
			f := *held
			held = nil
			in.Receive(session.Message{Kind: session.AudioMessage, Audio: session.AudioFrame{Data: f.Opus, Timestamp: f.Timestamp},
				Size: len(f.Opus) + udpaudio.HeaderSize})
		}
	}
	c.mu.Lock()
	mine := c.pumper == a
	if mine {
		c.pumper, c.wake = nil, nil
	}
	handOn := c.handOnLocked()
	c.mu.Unlock()
	handOn()
	c.audioEnded(a)
}

// handQueued hands the queued messages that reached the hub before the
// frame held back (all of them when none is) to the session, while a's
// pump is the one to (a hello the session handles here hands over to the
// next conversation's pump).
func (c *conn) handQueued(a *udpaudio.Session, in session.Inbox, held *udpaudio.Frame) {
	for {
		c.mu.Lock()
		if c.pumper != a || c.over || len(c.queue) == 0 || held != nil && held.Arrived.Before(c.queue[0].arrived) {
			handOn := c.handOnLocked()
			c.mu.Unlock()
			handOn()
			return
		}
		p := c.popLocked()
		c.mu.Unlock()
		in.Receive(text(p))
	}
}

func text(p []byte) session.Message {
	return session.Message{Kind: session.TextMessage, Text: p, Size: len(p)}
}
