package registry

import (
	"sync"
	"time"

	"github.com/xiaozhi-hub/hub"
)

// broker fans events out to subscribers without ever blocking the publisher.
type broker struct {
	mu     sync.Mutex
	subs   map[*subscriber]struct{}
	closed bool
}

type subscriber struct {
	ch      chan hub.Event
	types   map[string]bool // nil: every type
	dropped int             // events lost since the last delivered one; guarded by broker.mu
}

const subscriberBuffer = 256

func newBroker() *broker { return &broker{subs: map[*subscriber]struct{}{}} }

func (b *broker) subscribe(types ...string) (<-chan hub.Event, func()) {
	s := &subscriber{ch: make(chan hub.Event, subscriberBuffer)}
	if len(types) > 0 {
		s.types = map[string]bool{}
		for _, t := range types {
			s.types[t] = true
		}
	}
	b.mu.Lock()
	if b.closed {
		close(s.ch)
	} else {
		b.subs[s] = struct{}{}
	}
	b.mu.Unlock()
	var once sync.Once
	return s.ch, func() {
		once.Do(func() {
			b.mu.Lock()
			if _, ok := b.subs[s]; ok {
				delete(b.subs, s)
				close(s.ch)
			}
			b.mu.Unlock()
		})
	}
}

func (b *broker) publish(ev hub.Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for s := range b.subs {
		if s.types != nil && !s.types[ev.Type] {
			continue
		}
		if s.dropped > 0 && len(s.ch) == cap(s.ch) {
			// Still no room (only this publisher sends, under b.mu): count
			// the event without building the notice.
			s.dropped++
			continue
		}
		if s.dropped > 0 {
			// Tell the subscriber it missed something, as soon as there is room.
			select {
			case s.ch <- hub.Event{Type: "events_dropped", Time: time.Now(), Data: map[string]int{"count": s.dropped}}:
				s.dropped = 0
			default:
				s.dropped++
				continue
			}
		}
		select {
		case s.ch <- ev:
		default:
			s.dropped++
		}
	}
}

func (b *broker) close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	for s := range b.subs {
		close(s.ch)
		delete(b.subs, s)
	}
}
