package mqttbroker

import (
	"errors"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mochi-mqtt/server/v2/listeners"
)

// listener is a mochi listener over a net.Listener bound in New. Unlike
// mochi's TCP listener it bounds the connections open at once (including
// those that have not sent CONNECT), gives CONNECT a deadline (mochi sets
// none before it), closes every connection it accepted on Close, and waits
// for its goroutines.
type listener struct {
	ln             net.Listener
	connectTimeout time.Duration
	slots          chan struct{}
	onConnGone     func(net.Conn)
	overLimit      *atomic.Uint64

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

func (l *listener) ID() string                { return "xiaozhi-hub-mqtt" }
func (l *listener) Address() string           { return l.ln.Addr().String() }
func (l *listener) Protocol() string          { return "tcp" }
func (l *listener) Init(_ *slog.Logger) error { return nil }

// Serve accepts connections until Close; mochi runs it on its own goroutine,
// which Close waits for through wg.
func (l *listener) Serve(establish listeners.EstablishFn) {
	if !l.track(nil) {
		return
	}
	defer l.wg.Done()
	for {
		conn, err := l.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			time.Sleep(10 * time.Millisecond) // e.g. out of file descriptors
			continue
		}
		select {
		case l.slots <- struct{}{}:
		default:
			l.overLimit.Add(1)
			_ = conn.Close()
			continue
		}
		if !l.track(conn) {
			<-l.slots
			_ = conn.Close()
			return
		}
		_ = conn.SetDeadline(time.Now().Add(l.connectTimeout)) // mochi replaces it after CONNECT
		go func() {
			defer l.wg.Done()
			_ = establish(l.ID(), conn) // refusals are reported by the hooks
			_ = conn.Close()
			l.mu.Lock()
			delete(l.conns, conn)
			l.mu.Unlock()
			l.onConnGone(conn)
			<-l.slots
		}()
	}
}

// track registers a goroutine (and conn, unless nil) unless closed.
func (l *listener) track(conn net.Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false
	}
	l.wg.Add(1)
	if conn != nil {
		l.conns[conn] = struct{}{}
	}
	return true
}

// Close stops accepting, lets mochi disconnect its clients, closes what is
// left (connections that never completed CONNECT) and waits.
func (l *listener) Close(closeClients listeners.CloseFn) {
	l.mu.Lock()
	already := l.closed
	l.closed = true
	l.mu.Unlock()
	if already {
		return
	}
	_ = l.ln.Close()
	closeClients(l.ID())
	l.mu.Lock()
	for c := range l.conns {
		_ = c.Close()
	}
	l.mu.Unlock()
	l.wg.Wait()
}
