package registrytest

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/registry"
)

// Conn is a fake device connection (a registry.Conn). It records what the
// registry asks of it, and a test scripts its answers: per tool (Answer),
// for every call (Handle), for IoT commands (HandleIoT), or holds calls
// until released (Hold). A tool with no script echoes its arguments as one
// text item. Close ends the connection as a session does: calls in flight
// and later ones fail with EGONE.
type Conn struct {
	ID string // the device id, for error messages

	mu       sync.Mutex
	answers  map[string]Answer
	handle   func(ctx context.Context, name string, args json.RawMessage) (hub.CallResult, error)
	handleIo func(ctx context.Context, cmds []hub.IoTCommand) error
	calls    []Call
	iot      [][]hub.IoTCommand
	closes   []string
	hold     chan struct{}
	gone     chan struct{} // closed by the first Close
}

var _ registry.Conn = (*Conn)(nil)

// Call is one tool call the device received.
type Call struct {
	Tool string
	Args json.RawMessage
}

// Answer is a scripted answer to calls of one tool: after Delay (or when the
// call's context ends first, ETIMEOUT as a session reports it), Result or Err.
type Answer struct {
	Result hub.CallResult
	Err    error
	Delay  time.Duration
}

// NewConn returns a connection for the device id.
func NewConn(id string) *Conn {
	return &Conn{ID: id, answers: map[string]Answer{}, gone: make(chan struct{})}
}

// Text is a successful result with one text item.
func Text(s string) hub.CallResult {
	b, _ := json.Marshal([]map[string]string{{"type": "text", "text": s}})
	return hub.CallResult{Content: b}
}

// Answer scripts the answer to calls of tool.
func (c *Conn) Answer(tool string, a Answer) {
	c.mu.Lock()
	c.answers[tool] = a
	c.mu.Unlock()
}

// Handle answers every call without a scripted Answer.
func (c *Conn) Handle(h func(ctx context.Context, name string, args json.RawMessage) (hub.CallResult, error)) {
	c.mu.Lock()
	c.handle = h
	c.mu.Unlock()
}

// HandleIoT runs h for every IoT command batch (after recording it).
func (c *Conn) HandleIoT(h func(ctx context.Context, cmds []hub.IoTCommand) error) {
	c.mu.Lock()
	c.handleIo = h
	c.mu.Unlock()
}

// Hold makes calls wait, after they are recorded, until release is called
// (or the call's context ends, or the connection closes).
func (c *Conn) Hold() (release func()) {
	ch := make(chan struct{})
	c.mu.Lock()
	c.hold = ch
	c.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			close(ch)
			c.mu.Lock()
			if c.hold == ch {
				c.hold = nil
			}
			c.mu.Unlock()
		})
	}
}

// Calls returns the tool calls received so far, in order.
func (c *Conn) Calls() []Call {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Call(nil), c.calls...)
}

// IoT returns the IoT command batches received so far, in order.
func (c *Conn) IoT() [][]hub.IoTCommand {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([][]hub.IoTCommand(nil), c.iot...)
}

// Closes returns the reasons given to Close, in order.
func (c *Conn) Closes() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.closes...)
}

// Closed is closed when the connection is.
func (c *Conn) Closed() <-chan struct{} { return c.gone }

// CallTool implements registry.Conn.
func (c *Conn) CallTool(ctx context.Context, name string, args json.RawMessage) (hub.CallResult, error) {
	c.mu.Lock()
	c.calls = append(c.calls, Call{Tool: name, Args: append(json.RawMessage(nil), args...)})
	hold, handle := c.hold, c.handle
	a, scripted := c.answers[name]
	c.mu.Unlock()
	if err := c.wait(ctx, hold, 0); err != nil {
		return hub.CallResult{}, err
	}
	switch {
	case scripted:
		if err := c.wait(ctx, nil, a.Delay); err != nil {
			return hub.CallResult{}, err
		}
		return a.Result, a.Err
	case handle != nil:
		return handle(ctx, name, args)
	}
	text, _ := json.Marshal(string(args))
	return hub.CallResult{Content: json.RawMessage(`[{"type":"text","text":` + string(text) + `}]`)}, nil
}

// wait waits for hold (if not nil) or d, whichever applies, failing as a
// session does when the connection ends or the call's time runs out.
func (c *Conn) wait(ctx context.Context, hold chan struct{}, d time.Duration) error {
	select {
	case <-c.gone:
		return hub.Errorf(hub.EGONE, "device %s disconnected during the call", c.ID)
	default:
	}
	var timer <-chan time.Time
	switch {
	case hold != nil:
	case d > 0:
		t := time.NewTimer(d)
		defer t.Stop()
		timer = t.C
	default:
		return nil
	}
	select {
	case <-hold:
	case <-timer:
	case <-c.gone:
		return hub.Errorf(hub.EGONE, "device %s disconnected during the call", c.ID)
	case <-ctx.Done():
		return hub.Errorf(hub.ETIMEOUT, "device %s did not answer in time", c.ID)
	}
	return nil
}

// SendIoT implements registry.Conn.
func (c *Conn) SendIoT(ctx context.Context, cmds []hub.IoTCommand) error {
	c.mu.Lock()
	c.iot = append(c.iot, cmds)
	h := c.handleIo
	c.mu.Unlock()
	select {
	case <-c.gone:
		return hub.Errorf(hub.EGONE, "device %s disconnected", c.ID)
	default:
	}
	if h != nil {
		return h(ctx, cmds)
	}
	return nil
}

// Close implements registry.Conn: the hub ends the connection.
func (c *Conn) Close(reason string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.hangupLocked()
	c.closes = append(c.closes, reason)
}

// Hangup ends the connection from the device's side: calls in flight fail
// with EGONE. The session would then call Link.Disconnect; see Device.
func (c *Conn) Hangup() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.hangupLocked()
}

func (c *Conn) hangupLocked() {
	select {
	case <-c.gone:
	default:
		close(c.gone)
	}
}
