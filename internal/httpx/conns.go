package httpx

import (
	"net"
	"net/http"
	"sync"
)

// NewConns tracks connections that have not sent a request yet. Shutdown
// waits for them (net/http treats such a connection as busy for its first
// 5 s), but closing one loses nothing: browsers pre-connect, HTTP clients
// dial spare connections, scanners connect and wait. CloseAll ends them so that
// a hub stops at once.
type NewConns struct {
	mu      sync.Mutex
	m       map[net.Conn]struct{}
	closing bool
}

// Track is an http.Server ConnState hook.
func (c *NewConns) Track(conn net.Conn, state http.ConnState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if state == http.StateNew {
		if c.closing { // accepted as the listener closed
			_ = conn.Close()
			return
		}
		if c.m == nil {
			c.m = map[net.Conn]struct{}{}
		}
		c.m[conn] = struct{}{}
		return
	}
	delete(c.m, conn)
}

// CloseAll closes every connection still waiting for its first request,
// and any accepted from now on. It is an http.Server shutdown hook.
func (c *NewConns) CloseAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closing = true
	for conn := range c.m {
		_ = conn.Close()
	}
	clear(c.m)
}
