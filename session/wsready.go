package session

import (
	"bufio"
	"context"
	"net"
	"sync"
	"syscall"
)

// readiness lets the long-lived read of a WebSocket connection wait for
// the device's next bytes on the socket itself, and call into the
// WebSocket library only once there is something to read. An idle device
// spends its life in that wait, and the GC halves a goroutine's stack only
// while less than a quarter of it is in use: blocked inside the library's
// read (its reader, frame-header and buffer frames) the goroutine uses
// about 2.2 KiB and keeps an 8 KiB stack; blocked here it uses under
// 1 KiB and the GC takes it to 4 KiB.
type readiness struct {
	br    *bufio.Reader   // the library's read buffer
	reads *pooledReads    // under br: the bytes read from the socket and not yet taken
	raw   syscall.RawConn // nil: no waiting (not a socket, or no peek on this platform)
	// mu is held while br and reads are looked at outside the library: by
	// wait, and by Close, whose close handshake reads them from another
	// goroutine.
	mu sync.Mutex
	// ready is the callback given to raw.Read, made once (a closure per
	// wait would be an allocation per frame).
	ready func(fd uintptr) bool
	peek  [1]byte
}

// newReadiness returns the readiness of a hijacked socket conn, read
// through reads and br; without them it waits for nothing.
func newReadiness(conn net.Conn, reads *pooledReads, br *bufio.Reader) *readiness {
	r := &readiness{br: br, reads: reads}
	sc, ok := conn.(syscall.Conn)
	if !ok || br == nil || reads == nil || !canPeek {
		return r
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return r
	}
	r.raw = raw
	r.ready = func(fd uintptr) bool { return peekReady(fd, r.peek[:]) }
	return r
}

// wait returns once the connection has bytes to read, has ended, or
// failed: the read that follows says which. It returns at once for a read
// with a deadline or a cancellation (the library ends those by closing
// the connection, which ends this wait too, but the read is short-lived
// anyway), and when bytes read from the socket wait already.
func (r *readiness) wait(ctx context.Context) {
	if r == nil || r.raw == nil || ctx.Done() != nil {
		return
	}
	r.mu.Lock()
	buffered := r.br.Buffered() + r.reads.buffered()
	r.mu.Unlock()
	if buffered > 0 {
		return
	}
	_ = r.raw.Read(r.ready)
}

// closing runs f, the library's close handshake, with mu held.
func (r *readiness) closing(f func()) {
	if r == nil {
		f()
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	f()
}
