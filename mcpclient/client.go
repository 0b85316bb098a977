// Package mcpclient is the hub's MCP client for one device connection. The
// device runs the MCP server (docs/protocol.md §8); the hub sends
// initialize, notifications/initialized, tools/list and tools/call, each
// with a fresh numeric id, and matches replies by id.
//
// It is written for the firmware rather than on top of a general MCP SDK:
// the firmware wants protocolVersion 2024-11-05 without a discovery probe,
// capabilities.vision at the top level, the non-standard withUserTools flag,
// tool-name cursors, and sends error objects without "code". Owning these
// ~300 lines keeps every one of those rules visible and tested here.
package mcpclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/protocol"
)

// Sender writes one JSON-RPC payload to the device (the caller wraps it in
// the {"session_id","type":"mcp","payload"} envelope).
type Sender func(ctx context.Context, payload []byte) error

// Options configures a Client. The zero value is usable.
type Options struct {
	Logger *slog.Logger // one summary line per exchange; default discards
	// OnNotification receives every notification from the device.
	OnNotification func(method string, params json.RawMessage)
	// Vision, when set, is announced in initialize as capabilities.vision
	// so that the device's camera tool can reach the explain endpoint.
	Vision *Vision
	// Limits on tools/list, so that a device that repeats cursors or sends
	// huge lists cannot hold the hub: pages (default 64), bytes (default
	// 4 MiB across pages) and tools (default 1024).
	MaxPages, MaxListBytes, MaxTools int
	// ClientVersion is sent as clientInfo.version.
	ClientVersion string
	// MaxInFlight bounds the requests sent to the device and not yet
	// answered (default 4): the firmware runs tools one at a time on its
	// main loop, so more only queue up on the device, where a caller's
	// timeout cannot withdraw them. Further calls wait for a slot, up to
	// MaxQueued of them (default 64); beyond that a call fails at once with
	// EBUSY.
	MaxInFlight, MaxQueued int
}

// Vision is the explain endpoint for the device's camera tool.
type Vision struct {
	URL   string `json:"url"`
	Token string `json:"token,omitempty"`
}

// Client is one device's MCP client. Its methods are safe for concurrent use.
type Client struct {
	send Sender
	opts Options
	log  *slog.Logger

	slots  chan struct{} // one token per request in flight
	queued atomic.Int64  // calls waiting for a slot
	done   chan struct{} // closed by Close

	mu      sync.Mutex
	nextID  int64
	pending []pendingCall // at most MaxInFlight: a slice, smaller than a map for every idle device
	closed  error         // set once by Close
}

// pendingCall is a request waiting for its reply.
type pendingCall struct {
	id int64
	ch chan protocol.RPC
}

// find is the index of request id in c.pending, or -1. c.mu is held.
func (c *Client) find(id int64) int {
	for i, p := range c.pending {
		if p.id == id {
			return i
		}
	}
	return -1
}

// take removes request id from c.pending and returns its channel, or
// reports false. c.mu is held.
func (c *Client) take(id int64) (chan protocol.RPC, bool) {
	i := c.find(id)
	if i < 0 {
		return nil, false
	}
	ch := c.pending[i].ch
	last := len(c.pending) - 1
	c.pending[i] = c.pending[last]
	c.pending[last] = pendingCall{}
	c.pending = c.pending[:last]
	return ch, true
}

// New returns a Client that sends through send. Replies must be handed to
// Deliver by the connection's read loop.
func New(send Sender, opts Options) *Client {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.MaxPages <= 0 {
		opts.MaxPages = 64
	}
	if opts.MaxListBytes <= 0 {
		opts.MaxListBytes = 4 << 20
	}
	if opts.MaxTools <= 0 {
		opts.MaxTools = 1024
	}
	if opts.ClientVersion == "" {
		opts.ClientVersion = "dev"
	}
	if opts.MaxInFlight <= 0 {
		opts.MaxInFlight = 4
	}
	if opts.MaxQueued <= 0 {
		opts.MaxQueued = 64
	}
	return &Client{send: send, opts: opts, log: opts.Logger,
		slots: make(chan struct{}, opts.MaxInFlight), done: make(chan struct{})}
}

// Awaits reports whether m is a response to a request of this client that
// is still waiting for it: the hub asked for that message, so it is not
// unsolicited traffic (the session does not count it against the device's
// rate limit). Each request is answered once, so a device cannot use this
// for more messages than the hub's own requests in flight.
func (c *Client) Awaits(m *protocol.RPC) bool {
	if !m.IsResponse() {
		return false
	}
	id, ok := m.IntID()
	return ok && c.awaits(id)
}

func (c *Client) awaits(id int64) bool {
	c.mu.Lock()
	found := c.find(id) >= 0
	c.mu.Unlock()
	return found
}

// FailReply fails the request id at once with an EDEVICE error showing raw,
// a reply to it that could not be decoded (see protocol.RecoverReplyID),
// instead of letting its caller wait for the whole timeout. It reports
// whether a request with that id was waiting.
func (c *Client) FailReply(id int64, raw []byte) bool {
	c.mu.Lock()
	ch, found := c.take(id)
	c.mu.Unlock()
	if !found {
		return false
	}
	ch <- protocol.RPC{ID: json.RawMessage(strconv.FormatInt(id, 10)), Error: &protocol.RPCError{
		Message: "the reply is not valid JSON: " + hub.Truncate(raw, maxRawReply), // firmware 2.4 does not escape error messages
	}}
	return true
}

// maxRawReply bounds the raw text of an undecodable reply shown in errors.
const maxRawReply = 512

// Deliver hands a message from the device to the client: a response
// completes its pending request, a notification goes to OnNotification, and
// a request from the device is answered with "method not found" (devices
// do not send requests; the answer keeps a confused peer from waiting).
func (c *Client) Deliver(m protocol.RPC) {
	switch {
	case m.IsResponse():
		id, ok := m.IntID()
		c.mu.Lock()
		ch, found := c.take(id)
		c.mu.Unlock()
		if !ok || !found {
			c.log.Warn("mcp reply matches no pending request (late, after a timeout, or a bad id)", "id", string(m.ID))
			return
		}
		ch <- m // buffered, never blocks
	case m.IsNotification():
		if c.opts.OnNotification != nil {
			c.opts.OnNotification(m.Method, m.Params)
		}
	default: // a request from the device
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = c.send(ctx, protocol.EncodeErrorResponse(m.ID, -32601, "method not found: the hub is an MCP client"))
	}
}

// Close fails every pending request at once with err and refuses new ones.
// err should say why (for example that the device disconnected).
func (c *Client) Close(err error) {
	c.mu.Lock()
	if c.closed == nil {
		c.closed = err
	}
	pending := c.pending
	c.pending = nil
	select {
	case <-c.done:
	default:
		close(c.done)
	}
	c.mu.Unlock()
	for _, p := range pending {
		close(p.ch)
	}
}

// Call sends a request and waits for its reply. Errors are *hub.Error:
// EDEVICE when the device answered with an error (with its message),
// ETIMEOUT when ctx's deadline passed, EGONE when the client was closed.
func (c *Client) Call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	r, err := c.call(ctx, method, params)
	return r.Result, err
}

// call is Call returning the whole reply (see protocol.RPC.ResultMembers).
func (c *Client) call(ctx context.Context, method string, params any) (protocol.RPC, error) {
	start := time.Now()
	release, err := c.acquire(ctx, method)
	if err != nil {
		return protocol.RPC{}, err
	}
	defer release()
	id, ch, err := c.register()
	if err != nil {
		return protocol.RPC{}, err
	}
	r, err := c.roundTrip(ctx, id, ch, method, params)
	c.logExchange(method, id, params, r.Result, err, time.Since(start))
	return r, err
}

func (c *Client) roundTrip(ctx context.Context, id int64, ch chan protocol.RPC, method string, params any) (protocol.RPC, error) {
	payload, err := protocol.EncodeRequest(id, method, params)
	if err != nil {
		c.forget(id)
		return protocol.RPC{}, hub.Errorf(hub.EINVALID, "encode %s request: %w", method, err)
	}
	if err := c.send(ctx, payload); err != nil {
		c.forget(id)
		if ctxErr := ctx.Err(); ctxErr != nil {
			return protocol.RPC{}, c.ctxError(ctxErr, method)
		}
		return protocol.RPC{}, hub.Errorf(hub.EGONE, "sending %s to the device failed: %w", method, err)
	}
	select {
	case m, ok := <-ch:
		if !ok {
			return protocol.RPC{}, c.closedError(method)
		}
		if m.Error != nil {
			return protocol.RPC{}, &hub.Error{Code: hub.EDEVICE, Message: "device error: " + m.Error.Message, Err: m.Error}
		}
		return m, nil
	case <-ctx.Done():
		c.forget(id)
		return protocol.RPC{}, c.ctxError(ctx.Err(), method)
	}
}

// Notify sends a notification (no reply expected).
func (c *Client) Notify(ctx context.Context, method string, params any) error {
	payload, err := protocol.EncodeNotification(method, params)
	if err != nil {
		return fmt.Errorf("encode %s: %w", method, err)
	}
	return c.send(ctx, payload)
}

// acquire waits for a slot for one request in flight (see
// Options.MaxInFlight) and returns its release.
func (c *Client) acquire(ctx context.Context, method string) (release func(), err error) {
	release = func() { <-c.slots }
	select {
	case c.slots <- struct{}{}:
		return release, nil
	default:
	}
	if c.queued.Add(1) > int64(c.opts.MaxQueued) {
		c.queued.Add(-1)
		return nil, hub.Errorf(hub.EBUSY, "the device is busy: %d requests are in flight and %d more are waiting; try again later",
			c.opts.MaxInFlight, c.opts.MaxQueued)
	}
	defer c.queued.Add(-1)
	select {
	case c.slots <- struct{}{}:
		return release, nil
	case <-c.done:
		return nil, c.closedError(method)
	case <-ctx.Done():
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, &hub.Error{Code: hub.ETIMEOUT, Err: ctx.Err(), Message: fmt.Sprintf(
				"%s was not sent in time: the device was busy with %d earlier requests", method, c.opts.MaxInFlight)}
		}
		return nil, c.ctxError(ctx.Err(), method)
	}
}

func (c *Client) register() (int64, chan protocol.RPC, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed != nil {
		return 0, nil, &hub.Error{Code: hub.EGONE, Message: c.closed.Error(), Err: c.closed}
	}
	// Ids are positive and stay within int32: the firmware parses them as C int.
	for {
		c.nextID++
		if c.nextID > math.MaxInt32 {
			c.nextID = 1
		}
		if c.find(c.nextID) < 0 {
			break
		}
	}
	ch := make(chan protocol.RPC, 1)
	if c.pending == nil {
		c.pending = make([]pendingCall, 0, c.opts.MaxInFlight)
	}
	c.pending = append(c.pending, pendingCall{c.nextID, ch})
	return c.nextID, ch, nil
}

func (c *Client) forget(id int64) {
	c.mu.Lock()
	c.take(id)
	c.mu.Unlock()
}

func (c *Client) closedError(method string) error {
	c.mu.Lock()
	err := c.closed
	c.mu.Unlock()
	if err == nil {
		err = errors.New("connection closed")
	}
	return &hub.Error{Code: hub.EGONE, Message: fmt.Sprintf("%s: no answer: %v", method, err), Err: err}
}

func (c *Client) ctxError(err error, method string) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return &hub.Error{Code: hub.ETIMEOUT, Message: fmt.Sprintf("the device did not answer %s in time", method), Err: err}
	}
	return fmt.Errorf("%s: %w", method, err)
}

// logExchange writes every exchange at debug, with its arguments and
// result summarised; the info log has one line per call, whatever its
// transport or outcome (registry's finish).
func (c *Client) logExchange(method string, id int64, params any, res json.RawMessage, err error, d time.Duration) {
	ctx := context.Background()
	if !c.log.Enabled(ctx, slog.LevelDebug) {
		return
	}
	outcome := "ok"
	result := summarize(res)
	if err != nil {
		outcome = hub.ErrorCode(err)
		result = hub.ErrorMessage(err)
	}
	args, _ := json.Marshal(params)
	c.log.LogAttrs(ctx, slog.LevelDebug, "mcp exchange",
		slog.String("method", method), slog.Int64("id", id),
		slog.Float64("ms", float64(d.Microseconds())/1000), slog.String("outcome", outcome),
		slog.String("args", summarize(args)), slog.String("result", result))
}

func summarize(b []byte) string { return hub.Truncate(b, 200) }
