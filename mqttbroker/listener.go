package mqttbroker

import (
	"errors"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mochi-mqtt/server/v2/listeners"
	"github.com/xiaozhi-hub/hub"
)

// listener is a mochi listener over a net.Listener bound in New. Unlike
// mochi's TCP listener it bounds the connections open at once, and those
// not logged in yet per source address and in all (a flood of sockets that
// never send CONNECT from one address must not take the places of devices
// elsewhere), gives CONNECT a deadline (mochi sets none before it), bounds
// each write (writeConn), closes every connection it accepted on Close, and
// waits for its goroutines.
type listener struct {
	ln             net.Listener
	connectTimeout time.Duration
	writeTimeout   time.Duration
	slots          chan struct{}
	onConnGone     func(net.Conn)
	// closeClients disconnects the broker's clients at Close, in place of
	// mochi's own (see Close).
	closeClients func()
	overLimit    *atomic.Uint64
	overPending  *atomic.Uint64

	maxPending, maxPendingPerAddr int

	mu       sync.Mutex
	conns    map[net.Conn]string // accepted connections, with their source key while not logged in ("" after)
	pending  map[string]int      // connections not logged in, by source key
	nPending int
	closed   bool
	wg       sync.WaitGroup
}

func (l *listener) ID() string                { return "xiaozhi-hub-mqtt" }
func (l *listener) Address() string           { return l.ln.Addr().String() }
func (l *listener) Protocol() string          { return "tcp" }
func (l *listener) Init(_ *slog.Logger) error { return nil }

// Serve accepts connections until Close; mochi runs it on its own goroutine,
// which Close waits for through wg.
func (l *listener) Serve(establish listeners.EstablishFn) {
	if !l.track() {
		return
	}
	defer l.wg.Done()
	for {
		accepted, err := l.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			time.Sleep(10 * time.Millisecond) // e.g. out of file descriptors
			continue
		}
		conn := &writeConn{Conn: accepted, timeout: l.writeTimeout}
		select {
		case l.slots <- struct{}{}:
		default:
			l.overLimit.Add(1)
			_ = conn.Close()
			continue
		}
		switch l.admit(conn) {
		case admitted:
		case overPending:
			<-l.slots
			l.overPending.Add(1)
			_ = conn.Close()
			continue
		case closing:
			<-l.slots
			_ = conn.Close()
			return
		}
		_ = conn.SetDeadline(time.Now().Add(l.connectTimeout)) // mochi replaces it after CONNECT
		go func() {
			_ = establish(l.ID(), conn) // refusals are reported by the hooks
			l.gone(conn)
		}()
	}
}

// gone closes and forgets a connection whose goroutine (established in
// Serve) ends. Not inlined, to keep that goroutine's frame small while its
// device is idle: it is live underneath mochi's reader.
//
//go:noinline
func (l *listener) gone(conn net.Conn) {
	defer l.wg.Done()
	_ = conn.Close()
	l.mu.Lock()
	l.releaseLocked(conn)
	delete(l.conns, conn)
	l.mu.Unlock()
	l.onConnGone(conn)
	<-l.slots
}

// track registers the accept goroutine unless closed.
func (l *listener) track() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false
	}
	l.wg.Add(1)
	return true
}

type admission int

const (
	admitted    admission = iota
	overPending           // too many connections not logged in, from its address or in all
	closing               // the listener is closing
)

// admit registers an accepted connection, not logged in yet, and its
// goroutine, if the pending limits allow it.
func (l *listener) admit(conn net.Conn) admission {
	key := hub.SourceKey(conn.RemoteAddr().String())
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return closing
	}
	if l.nPending >= l.maxPending || l.pending[key] >= l.maxPendingPerAddr {
		return overPending
	}
	l.pending[key]++
	l.nPending++
	l.conns[conn] = key
	l.wg.Add(1)
	return admitted
}

// loggedIn takes conn out of the pending count: its CONNECT was accepted.
func (l *listener) loggedIn(conn net.Conn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.releaseLocked(conn)
}

// releaseLocked takes conn out of the pending count, if it is in it.
func (l *listener) releaseLocked(conn net.Conn) {
	key, ok := l.conns[conn]
	if !ok || key == "" {
		return
	}
	l.conns[conn] = ""
	l.nPending--
	if l.pending[key]--; l.pending[key] <= 0 {
		delete(l.pending, key)
	}
}

// pendingCount is the number of connections not logged in yet.
func (l *listener) pendingCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.nPending
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
	// Not mochi's closeClients: its Clients.GetByListener read-locks the
	// client map twice (through Len), which deadlocks with a client
	// connecting or leaving in between (mochi-mqtt/server issue #488); a
	// hub shutting down while devices come and go hung on it.
	if l.closeClients != nil {
		l.closeClients()
	}
	l.mu.Lock()
	for c := range l.conns {
		_ = c.Close()
	}
	l.mu.Unlock()
	l.wg.Wait()
}

// writeConn bounds each write to a device: the hub writes on the caller's
// goroutine (Broker.Publish), and mochi sets no write deadline of its own
// but the keepalive's. A write that fails or times out closes the
// connection, as the device may have part of a packet.
type writeConn struct {
	net.Conn
	timeout time.Duration
}

func (c *writeConn) Write(b []byte) (int, error) {
	_ = c.Conn.SetWriteDeadline(time.Now().Add(c.timeout))
	n, err := c.Conn.Write(b)
	if err != nil {
		_ = c.Conn.Close()
	}
	return n, err
}
