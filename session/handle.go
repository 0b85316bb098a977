package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/mcpclient"
	"github.com/xiaozhi-hub/hub/protocol"
	"github.com/xiaozhi-hub/hub/registry"
)

// handleText dispatches one text frame by its type. MCP messages, the
// common case, take a path with small stack frames (see serve). It takes a
// token from the device's text budget for every frame but a reply to a
// request of the hub (see mcpclient.Client.Awaits): the limit is for what
// the device sends unasked, and the hub bounds its own requests. It returns
// an error when the device is over its budget and was disconnected.
func (s *session) handleText(ctx context.Context, data []byte, now time.Time) error {
	data = protocol.ValidText(data) // the one place device text enters
	m, err := protocol.DecodeMessage(data)
	s.srv.m.Message("in", typeName(TextMessage, m.Type), len(data))
	if err != nil {
		if s.failReply(data) {
			return nil
		}
		if err := s.budget(now); err != nil {
			return err
		}
		s.badInput("bad_message", err)
		return nil
	}
	if m.Type == protocol.TypeMCP && s.client != nil && m.Payload != nil {
		return s.handleMCP(&m, now)
	}
	if err := s.budget(now); err != nil {
		return err
	}
	s.handleOther(ctx, m)
	return nil
}

// budget takes a token from the device's text budget, or disconnects it.
func (s *session) budget(now time.Time) error {
	if s.textFrames.allow(s.srv.opts.TextRate, now) {
		return nil
	}
	return s.refuse(fmt.Sprintf("too many messages: the limit is %.0f per second", s.srv.opts.TextRate))
}

// handleMCP hands a device's JSON-RPC message to the MCP client.
func (s *session) handleMCP(m *protocol.Message, now time.Time) error {
	rpc, err := m.DecodePayload()
	if err != nil {
		if s.failReply(m.Raw) {
			return nil
		}
		if err := s.budget(now); err != nil {
			return err
		}
		s.badInput("bad_mcp", err)
		return nil
	}
	if !s.client.Awaits(&rpc) {
		if err := s.budget(now); err != nil {
			return err
		}
	}
	s.client.Deliver(rpc)
	return nil
}

// failReply fails at once the pending request a frame that could not be
// decoded answers, when its id can be found (firmware 2.4 does not escape
// quotes in error messages, §12.25), so that the caller hears about it
// instead of waiting for its timeout. The frame is still recorded as bad
// input. It reports whether a pending request was failed.
func (s *session) failReply(frame []byte) bool {
	if s.client == nil {
		return false
	}
	id, payload, ok := protocol.RecoverReplyID(frame)
	if !ok || !s.client.FailReply(id, payload) {
		return false
	}
	s.badInput("bad_mcp_reply", fmt.Errorf("reply to request %d is not valid JSON: %s", id, hub.Truncate(payload, 200)))
	return true
}

// handleOther handles every message but well-formed MCP ones.
func (s *session) handleOther(ctx context.Context, m protocol.Message) {
	switch m.Type {
	case protocol.TypeMCP:
		if s.client == nil {
			s.badInput("mcp_without_feature", errors.New("MCP message from a device whose hello did not announce features.mcp"))
			return
		}
		s.badInput("bad_mcp", errors.New(`mcp message without a "payload" object`))
	case protocol.TypeIoT:
		s.handleIoT(m.Raw)
	case protocol.TypeHello:
		if s.idle != nil {
			s.converse(ctx, m)
			return
		}
		// One hello per connection; a second one changes nothing (docs/protocol.md §3.3).
		s.link.Event(hub.EventDeviceMessage, map[string]any{"type": m.Type, "note": "repeated hello ignored"})
	case protocol.TypeGoodbye:
		if s.idle != nil && m.SessionID != "" && m.SessionID != s.convID {
			// A goodbye naming an earlier conversation of this connection
			// (late, or replayed) does not end the open one.
			s.link.Event(hub.EventDeviceMessage, map[string]any{"type": m.Type, "note": "goodbye for an earlier conversation ignored", "message": json.RawMessage(m.Raw)})
			return
		}
		s.closeConversation()
		if s.idle != nil {
			s.idle.EndConversation()
		}
		s.link.Event(hub.EventDeviceMessage, map[string]any{"type": m.Type, "message": json.RawMessage(m.Raw)})
	case protocol.TypeListen:
		s.listen(m)
		s.link.Event(hub.EventDeviceMessage, map[string]any{"type": m.Type, "message": json.RawMessage(m.Raw)})
	case protocol.TypeAbort:
		if conv := s.conversation(); conv != nil {
			conv.Abort()
		}
		s.link.Event(hub.EventDeviceMessage, map[string]any{"type": m.Type, "message": json.RawMessage(m.Raw)})
	default: // types the hub does not know
		s.link.Event(hub.EventDeviceMessage, map[string]any{"type": m.Type, "message": json.RawMessage(m.Raw)})
	}
}

// onNotification runs on the read loop: it must not block.
func (s *session) onNotification(method string, params json.RawMessage) {
	if method == "notifications/tools/list_changed" {
		s.startListing(time.Now(), false)
	}
	s.link.Event(hub.EventDeviceMessage, map[string]any{"type": "mcp", "notification": method, "params": params})
}

// startListing runs discovery (initialize first when init is set) on a
// goroutine owned by the Server and bound to the session's context, or asks
// the running one to list once more when it is done.
func (s *session) startListing(start time.Time, init bool) {
	s.listMu.Lock()
	defer s.listMu.Unlock()
	if s.listing {
		s.relist = true
		return
	}
	s.listing = true
	s.srv.goOwned(func() { s.discover(s.ctx, start, init) })
}

// discover lists the tools, again for as long as list_changed notifications
// keep arriving meanwhile. It clears s.listing when it returns.
func (s *session) discover(ctx context.Context, start time.Time, init bool) {
	if init {
		var info mcpclient.ServerInfo
		err := s.retry(ctx, "initialize", start, func(rctx context.Context) (err error) {
			info, err = s.client.Initialize(rctx)
			return err
		})
		if err != nil {
			s.identified("", "") // the failure is logged too
			s.listMu.Lock()
			s.listing, s.relist = false, false
			s.listMu.Unlock()
			return
		}
		s.identified(info.Name, info.Version)
		s.link.SetServerInfo(info.Name, info.Version) // stored in the background
	}
	for {
		s.listOnce(ctx, start)
		s.listMu.Lock()
		again := s.relist && ctx.Err() == nil
		s.relist = false
		s.listing = again
		s.listMu.Unlock()
		if !again {
			return
		}
		start = time.Now()
	}
}

// retry runs a discovery step until it succeeds, up to DiscoveryAttempts
// times with a doubling wait between attempts (a device asked right after
// boot may answer its first request badly), recording every failure. It
// stops when the connection ends. An answer that is a valid empty list is
// success: only errors are retried.
func (s *session) retry(ctx context.Context, step string, start time.Time, op func(context.Context) error) error {
	wait := s.srv.opts.DiscoveryBackoff
	for attempt := 1; ; attempt++ {
		// Off the Server's context, not ctx (the session's: see open);
		// the session's end fails the request at once (client.Close).
		rctx, cancel := context.WithTimeout(s.srv.ctx, s.srv.opts.RequestTimeout)
		err := op(rctx)
		cancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil || hub.ErrorCode(err) == hub.EGONE {
			return err // the connection ended: nobody to ask
		}
		f := registry.DiscoveryFailure{Step: step, Attempt: attempt, Err: err}
		if attempt < s.srv.opts.DiscoveryAttempts {
			f.RetryIn = wait
		}
		s.listFailed(f, start)
		if f.RetryIn == 0 {
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
		wait *= 2
	}
}

func (s *session) listOnce(ctx context.Context, start time.Time) {
	var tools []hub.Tool
	var incomplete error
	err := s.retry(ctx, "tools/list", start, func(rctx context.Context) error {
		var err error
		tools, err = s.client.ListTools(rctx)
		if errors.Is(err, mcpclient.ErrIncomplete) && len(tools) > 0 {
			incomplete = err // the device answered; asking again gives the same list
			return nil
		}
		return err
	})
	if err != nil {
		return
	}
	// Served from memory at once; stored in the background (in order with
	// the device's other writes), so that discovery, and its goroutine,
	// end without waiting for a commit.
	var change hub.ToolChange
	if incomplete != nil {
		// Recorded either way; whether the partial list replaces a cache
		// is the registry's rule.
		s.listFailed(registry.DiscoveryFailure{Step: "tools/list", Attempt: 1, Err: incomplete}, start)
		var applied bool
		if change, applied = s.link.SetPartialToolsLater(tools); !applied {
			return
		}
	} else {
		change = s.link.SetToolsLater(tools)
	}
	if incomplete == nil {
		d := time.Since(start)
		s.srv.m.Discovered("ok", d.Seconds())
		s.log.Info("tools discovered", "count", len(tools), "ms", float64(d.Microseconds())/1000)
		s.log.Debug("tool list changes", "added", len(change.Added), "removed", len(change.Removed), "changed", len(change.Changed))
	}
}

func (s *session) listFailed(f registry.DiscoveryFailure, start time.Time) {
	s.srv.m.Discovered("error", time.Since(start).Seconds())
	s.log.Warn("tool discovery failed", "step", f.Step, "attempt", f.Attempt, "retryIn", f.RetryIn, "err", f.Err)
	s.link.ToolsFailed(f)
}

// persisting returns a context for storing what the device reported: the
// device hanging up right after it spoke must not lose what it said, so the
// write ignores the connection's end and has a bound of its own.
func persisting(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
}
