// Package pipenet is a net.Listener over in-memory connections (net.Pipe),
// for tests that run in a testing/synctest bubble: a goroutine waiting on a
// loopback socket is not durably blocked, so a bubble that serves HTTP on
// one never lets its fake time move; one that serves on a pipenet.Listener
// does.
package pipenet

import (
	"context"
	"net"
	"sync"
)

// Listener accepts the connections made by its DialContext.
type Listener struct {
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
}

// Listen returns a Listener. Create it inside the bubble that uses it.
func Listen() *Listener {
	return &Listener{conns: make(chan net.Conn), closed: make(chan struct{})}
}

// DialContext connects to the listener, whatever the address; it has the
// signature of http.Transport.DialContext.
func (l *Listener) DialContext(ctx context.Context, _, _ string) (net.Conn, error) {
	c, s := net.Pipe()
	select {
	case l.conns <- s:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Accept waits for the next DialContext.
func (l *Listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

// Close makes Accept and DialContext fail; connections already made stay.
func (l *Listener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

// Addr is "pipe".
func (l *Listener) Addr() net.Addr { return addr{} }

type addr struct{}

func (addr) Network() string { return "pipe" }
func (addr) String() string  { return "pipe" }
