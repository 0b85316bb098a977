package sim_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/xiaozhi-hub/hub/protocol"
	"github.com/xiaozhi-hub/hub/sim"
)

const wait = 5 * time.Second

// fakeHub is a tiny stand-in for the hub: it accepts device WebSockets,
// reads the client hello and answers with hello (nil: no answer).
type fakeHub struct {
	srv   *httptest.Server
	URL   string
	conns chan *hubConn

	mu    sync.Mutex
	hello []byte
}

// hubConn is the hub's side of one device connection.
type hubConn struct {
	t       *testing.T
	c       *websocket.Conn
	req     *http.Request
	hello   []byte // the client hello
	text    chan []byte
	bin     chan []byte
	done    chan struct{}
	closeEr error // why the read loop ended (valid after done)
	nextID  int
}

func newFakeHub(t *testing.T) *fakeHub {
	t.Helper()
	h := &fakeHub{conns: make(chan *hubConn, 16), hello: protocol.ServerHello("sess-1", protocol.DefaultDownlinkAudio)}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		hc := &hubConn{t: t, c: c, req: r, text: make(chan []byte, 256), bin: make(chan []byte, 256), done: make(chan struct{})}
		defer close(hc.done)
		ctx := context.Background()
		_, hc.hello, err = c.Read(ctx)
		if err != nil {
			return
		}
		h.mu.Lock()
		hello := h.hello
		h.mu.Unlock()
		if hello != nil {
			if c.Write(ctx, websocket.MessageText, hello) != nil {
				return
			}
		}
		h.conns <- hc
		for {
			typ, data, err := c.Read(ctx)
			if err != nil {
				hc.closeEr = err
				return
			}
			if typ == websocket.MessageBinary {
				hc.bin <- data
			} else {
				hc.text <- data
			}
		}
	}))
	h.URL = "ws" + strings.TrimPrefix(h.srv.URL, "http") + "/xiaozhi/v1/"
	t.Cleanup(h.srv.Close)
	return h
}

func (h *fakeHub) setHello(b []byte) {
	h.mu.Lock()
	h.hello = b
	h.mu.Unlock()
}

func (h *fakeHub) accept(t *testing.T) *hubConn {
	t.Helper()
	select {
	case hc := <-h.conns:
		hc.t = t
		return hc
	case <-time.After(wait):
		t.Fatal("no device connected")
		return nil
	}
}

// connect starts a device for cfg against h and returns both ends.
func connect(t *testing.T, h *fakeHub, cfg sim.Config) (*sim.Device, *hubConn) {
	t.Helper()
	cfg.URL = h.URL
	if cfg.DeviceID == "" {
		cfg.DeviceID = "aa:bb:cc:00:00:01"
	}
	d := sim.New(cfg)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := d.Connect(ctx); err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return d, h.accept(t)
}

func (hc *hubConn) send(s string) {
	hc.t.Helper()
	if err := hc.c.Write(context.Background(), websocket.MessageText, []byte(s)); err != nil {
		hc.t.Fatalf("hub send: %v", err)
	}
}

// next returns the next text frame from the device.
func (hc *hubConn) next() []byte {
	hc.t.Helper()
	select {
	case b := <-hc.text:
		return b
	case <-time.After(wait):
		hc.t.Fatal("no frame from the device")
		return nil
	}
}

// none asserts that the device sends no text frame within d.
func (hc *hubConn) none(d time.Duration) {
	hc.t.Helper()
	select {
	case b := <-hc.text:
		hc.t.Fatalf("unexpected frame from the device: %s", b)
	case <-time.After(d):
	}
}

// sendMCP wraps payload in an mcp envelope.
func (hc *hubConn) sendMCP(payload string) {
	hc.t.Helper()
	hc.send(`{"session_id":"sess-1","type":"mcp","payload":` + payload + `}`)
}

// nextMCP returns the payload of the next frame, which must be mcp.
func (hc *hubConn) nextMCP() json.RawMessage {
	hc.t.Helper()
	raw := hc.next()
	m, err := protocol.DecodeMessage(raw)
	if err != nil || m.Type != "mcp" {
		hc.t.Fatalf("want an mcp frame, got %s (%v)", raw, err)
	}
	if m.SessionID != "sess-1" {
		hc.t.Fatalf("session_id not echoed: %s", raw)
	}
	return m.Payload
}

// rpc sends a request with a fresh numeric id and returns the raw reply.
func (hc *hubConn) rpc(method, params string) json.RawMessage {
	hc.t.Helper()
	hc.nextID++
	id := hc.nextID
	req := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q`, id, method)
	if params != "" {
		req += `,"params":` + params
	}
	hc.sendMCP(req + "}")
	reply := hc.nextMCP()
	var r struct{ ID int }
	if err := json.Unmarshal(reply, &r); err != nil || r.ID != id {
		hc.t.Fatalf("want reply to id %d, got %s", id, reply)
	}
	return reply
}

// result decodes the result of a successful reply into v.
func result(t *testing.T, reply json.RawMessage, v any) {
	t.Helper()
	var r struct {
		Result json.RawMessage
		Error  json.RawMessage
	}
	if err := json.Unmarshal(reply, &r); err != nil || r.Result == nil {
		t.Fatalf("want a result, got %s", reply)
	}
	if err := json.Unmarshal(r.Result, v); err != nil {
		t.Fatalf("decode result %s: %v", r.Result, err)
	}
}

// errorObject returns the error member of a reply, which must have one.
func errorObject(t *testing.T, reply json.RawMessage) map[string]any {
	t.Helper()
	var r struct {
		Result json.RawMessage
		Error  map[string]any
	}
	if err := json.Unmarshal(reply, &r); err != nil || r.Error == nil || r.Result != nil {
		t.Fatalf("want an error reply, got %s", reply)
	}
	return r.Error
}

// callText calls a tool and returns content[0].text of a successful result.
func (hc *hubConn) callText(name, args string) string {
	hc.t.Helper()
	var res struct {
		Content []struct{ Type, Text string }
		IsError *bool
	}
	result(hc.t, hc.rpc("tools/call", fmt.Sprintf(`{"name":%q,"arguments":%s}`, name, args)), &res)
	if len(res.Content) != 1 || res.Content[0].Type != "text" || res.IsError == nil || *res.IsError {
		hc.t.Fatalf("unexpected tools/call result %+v", res)
	}
	return res.Content[0].Text
}

// gone waits until the device's connection has ended on the hub's side.
func (hc *hubConn) gone(d time.Duration) {
	hc.t.Helper()
	select {
	case <-hc.done:
	case <-time.After(d):
		hc.t.Fatal("the device did not drop the connection")
	}
}
