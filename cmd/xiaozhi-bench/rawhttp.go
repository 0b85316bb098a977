package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"time"
)

// rawClient is a minimal HTTP/1.1 keep-alive client for the call path: it
// writes prepared request bytes and reads a response with Content-Length
// (or chunked). It exists so that the load generator, which shares the
// machine's two cores with the hub, spends little CPU per call; the hub
// sees ordinary HTTP/1.1 requests.
type rawClient struct {
	addr string
	max  int // connections at most

	mu    sync.Mutex
	idle  []*rawConn
	open  int
	freed chan struct{} // a connection became idle or closed
}

type rawConn struct {
	c  net.Conn
	br *bufio.Reader
}

func newRawClient(addr string, maxConns int) *rawClient {
	return &rawClient{addr: addr, max: maxConns, freed: make(chan struct{}, 1)}
}

// get returns an idle connection or dials one, waiting while max are busy.
func (rc *rawClient) get(ctx context.Context) (*rawConn, error) {
	for {
		rc.mu.Lock()
		if n := len(rc.idle); n > 0 {
			c := rc.idle[n-1]
			rc.idle = rc.idle[:n-1]
			rc.mu.Unlock()
			return c, nil
		}
		if rc.open < rc.max {
			rc.open++
			rc.mu.Unlock()
			c, err := (&net.Dialer{Timeout: 10 * time.Second}).DialContext(ctx, "tcp", rc.addr)
			if err != nil {
				rc.release(nil)
				return nil, err
			}
			return &rawConn{c: c, br: bufio.NewReaderSize(c, 4096)}, nil
		}
		rc.mu.Unlock()
		select {
		case <-rc.freed:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// release returns c to the pool, or closes it (nil: a failed dial).
func (rc *rawClient) release(c *rawConn) {
	rc.mu.Lock()
	if c != nil {
		rc.idle = append(rc.idle, c)
	} else {
		rc.open--
	}
	rc.mu.Unlock()
	select {
	case rc.freed <- struct{}{}:
	default:
	}
}

func (rc *rawClient) close() {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for _, c := range rc.idle {
		c.c.Close()
	}
	rc.open -= len(rc.idle)
	rc.idle = nil
}

// do sends req (a complete HTTP/1.1 request) and returns the status and
// body of the response.
func (rc *rawClient) do(ctx context.Context, req []byte) (int, []byte, error) {
	c, err := rc.get(ctx)
	if err != nil {
		return 0, nil, err
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = c.c.SetDeadline(dl)
	}
	status, body, err := c.roundTrip(req)
	if err != nil {
		c.c.Close()
		rc.release(nil)
		return 0, nil, err
	}
	rc.release(c)
	return status, body, nil
}

func (c *rawConn) roundTrip(req []byte) (int, []byte, error) {
	if _, err := c.c.Write(req); err != nil {
		return 0, nil, err
	}
	line, err := c.br.ReadSlice('\n')
	if err != nil {
		return 0, nil, err
	}
	// "HTTP/1.1 200 OK\r\n"
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.1 ")) {
		return 0, nil, fmt.Errorf("bad status line %q", line)
	}
	status, err := strconv.Atoi(string(line[9:12]))
	if err != nil {
		return 0, nil, fmt.Errorf("bad status line %q", line)
	}
	length, chunked, closing := -1, false, false
	for {
		h, err := c.br.ReadSlice('\n')
		if err != nil {
			return 0, nil, err
		}
		h = bytes.TrimRight(h, "\r\n")
		if len(h) == 0 {
			break
		}
		name, value, ok := bytes.Cut(h, []byte(":"))
		if !ok {
			continue
		}
		value = bytes.TrimSpace(value)
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			if length, err = strconv.Atoi(string(value)); err != nil {
				return 0, nil, fmt.Errorf("bad Content-Length %q", value)
			}
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			chunked = bytes.EqualFold(value, []byte("chunked"))
		case bytes.EqualFold(name, []byte("Connection")):
			closing = bytes.EqualFold(value, []byte("close"))
		}
	}
	var body []byte
	switch {
	case chunked:
		body, err = readChunked(c.br)
	case length >= 0:
		body = make([]byte, length)
		_, err = io.ReadFull(c.br, body)
	default:
		return 0, nil, errors.New("response without a length")
	}
	if err == nil && closing {
		err = errors.New("server closed the connection")
	}
	return status, body, err
}

func readChunked(br *bufio.Reader) ([]byte, error) {
	var body []byte
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return nil, err
		}
		size, err := strconv.ParseInt(string(bytes.TrimSpace(bytes.SplitN(line, []byte(";"), 2)[0])), 16, 64)
		if err != nil {
			return nil, fmt.Errorf("bad chunk size %q", line)
		}
		if size == 0 {
			for { // trailers
				l, err := br.ReadSlice('\n')
				if err != nil {
					return nil, err
				}
				if len(bytes.TrimSpace(l)) == 0 {
					return body, nil
				}
			}
		}
		chunk := make([]byte, size+2) // with CRLF
		if _, err := io.ReadFull(br, chunk); err != nil {
			return nil, err
		}
		body = append(body, chunk[:size]...)
	}
}

// postRequest builds a complete HTTP/1.1 POST request.
func postRequest(host, path, auth string, body []byte) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "POST %s HTTP/1.1\r\nHost: %s\r\nAuthorization: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n",
		path, host, auth, len(body))
	b.Write(body)
	return b.Bytes()
}
