package session

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
)

// Connection buffers. net/http hands a hijacked connection over with a
// 4 KiB reader and a 4 KiB writer, which the WebSocket library keeps for as
// long as the connection lives: 8 KiB per idle device. Device frames are
// small (hello, MCP replies of a few hundred bytes, 8 KB tools/list pages),
// and larger reads and writes go around a bufio buffer straight to the
// socket, so smaller buffers cost no extra system calls on the common path.
const (
	connReadBuffer  = 1 << 10
	connWriteBuffer = 1 << 10
)

// smallBuffers is the ResponseWriter given to websocket.Accept: its Hijack
// returns the connection with buffers of connReadBuffer and connWriteBuffer
// bytes instead of net/http's, and keeps the connection and its reader
// for the connection's readiness (wsready.go).
type smallBuffers struct {
	http.ResponseWriter
	conn net.Conn
	br   *bufio.Reader
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
	// Bytes the device sent after its upgrade request, already read by
	// net/http, must come first. They are moved into the new reader's
	// buffer, where the WebSocket library looks for them.
	n := brw.Reader.Buffered()
	var src io.Reader = conn
	if n > 0 {
		early, _ := brw.Reader.Peek(n)
		src = io.MultiReader(bytes.NewReader(bytes.Clone(early)), conn)
	}
	br := bufio.NewReaderSize(src, max(connReadBuffer, n))
	if n > 0 {
		if _, err := br.Peek(n); err != nil {
			conn.Close()
			return nil, nil, err
		}
	}
	w.conn, w.br = conn, br
	return conn, bufio.NewReadWriter(br, bufio.NewWriterSize(conn, connWriteBuffer)), nil
}
