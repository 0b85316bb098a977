package session

import (
	"bufio"
	"errors"
	"net"
	"net/http"
	"sync"
)

// Connection buffers. net/http hands a hijacked connection over with a
// 4 KiB reader and a 4 KiB writer, which the WebSocket library keeps for as
// long as the connection lives: 8 KiB per idle device. Device frames are
// small (hello, MCP replies of a few hundred bytes, 8 KB tools/list pages),
// and larger reads and writes go around a buffer straight to the socket,
// so small buffers cost no extra system calls on the common path.
//
// The write buffer is the library's for the connection's life (it also
// writes pongs and close frames on its own), so it is kept small: what the
// hub sends is a hello, MCP requests, a conversation's messages and Opus
// frames of a few hundred bytes, each one write; a larger message takes
// two. What is read waits in a
// buffer of connReadBuffer bytes taken from a pool when the socket is read
// and given back once the library has taken every byte (pooledReads), so a
// silent device holds none; the library's own bufio.Reader on top of it is
// only minReadBuffer bytes (frame headers are read through it a byte at a
// time; payloads go around it). The pooled buffers are not the write
// buffers' size: allocated side by side in a connection storm, buffers of
// one size class would share the heap's spans with the write buffers,
// which live on, and the pooled ones, once freed, would leave those spans
// half full rather than give them back.
const (
	connReadBuffer  = 2 << 10
	connWriteBuffer = 512
	minReadBuffer   = 16 // bufio's smallest
)

// smallBuffers is the ResponseWriter given to websocket.Accept: its Hijack
// returns the connection with small buffers instead of net/http's (see
// above), and keeps the socket and the reads for the connection's
// readiness (wsready.go).
type smallBuffers struct {
	http.ResponseWriter
	conn  net.Conn // the socket
	reads *pooledReads
	br    *bufio.Reader
}

func (w *smallBuffers) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *smallBuffers) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	hj, ok := w.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, errors.New("session: the ResponseWriter cannot be hijacked")
	}
	conn, brw, err := hj.Hijack()
	if err != nil {
		return nil, nil, err
	}
	reads := &pooledReads{Conn: conn}
	// Bytes the device sent after its upgrade request, already read by
	// net/http, must come first: they wait in the reads' buffer.
	if n := brw.Reader.Buffered(); n > 0 {
		early, _ := brw.Reader.Peek(n)
		reads.hold(early)
	}
	br := bufio.NewReaderSize(reads, minReadBuffer)
	w.conn, w.reads, w.br = conn, reads, br
	return reads, bufio.NewReadWriter(br, bufio.NewWriterSize(conn, connWriteBuffer)), nil
}

// readBuffers are the read buffers of connections that have bytes waiting.
var readBuffers = sync.Pool{New: func() any { b := make([]byte, connReadBuffer); return &b }}

// pooledReads is the socket as the WebSocket library reads it: bytes read
// from the socket wait in a buffer from readBuffers, which goes back to
// the pool once they have all been taken. Reads of a buffer's size or
// more go straight to the socket when nothing waits. One reader at a time
// (the library's read lock).
type pooledReads struct {
	net.Conn
	buf  *[]byte // nil while nothing waits
	r, w int     // what waits: (*buf)[r:w]
	err  error   // the socket's error after the bytes that wait
}

// hold makes b (bytes already read from the socket) the first bytes read.
func (c *pooledReads) hold(b []byte) {
	buf := readBuffers.Get().(*[]byte)
	if len(*buf) < len(b) {
		*buf = make([]byte, len(b))
	}
	c.buf, c.r, c.w = buf, 0, copy(*buf, b)
}

func (c *pooledReads) Read(p []byte) (int, error) {
	if c.buf == nil {
		if err := c.err; err != nil {
			c.err = nil
			return 0, err
		}
		if len(p) >= connReadBuffer {
			return c.Conn.Read(p)
		}
		buf := readBuffers.Get().(*[]byte)
		n, err := c.Conn.Read(*buf)
		if n <= 0 {
			readBuffers.Put(buf)
			return 0, err
		}
		c.buf, c.r, c.w, c.err = buf, 0, n, err
	}
	n := copy(p, (*c.buf)[c.r:c.w])
	c.r += n
	if c.r == c.w {
		readBuffers.Put(c.buf)
		c.buf = nil
	}
	return n, nil
}

// buffered is how many bytes wait.
func (c *pooledReads) buffered() int { return c.w - c.r }
