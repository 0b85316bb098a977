package session

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/coder/websocket"
	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/mcpclient"
	"github.com/xiaozhi-hub/hub/protocol"
	"github.com/xiaozhi-hub/hub/registry"
)

// handleText dispatches one text frame by its type. MCP messages, the
// common case, take a path with small stack frames (see serve).
func (s *session) handleText(ctx context.Context, data []byte) {
	m, err := protocol.DecodeMessage(data)
	s.srv.m.Message("in", typeName(websocket.MessageText, m.Type), len(data))
	if err != nil {
		s.badInput("bad_message", err)
		return
	}
	if m.Type == protocol.TypeMCP && s.client != nil && m.Payload != nil {
		s.handleMCP(&m)
		return
	}
	s.handleOther(ctx, m)
}

// handleMCP hands a device's JSON-RPC message to the MCP client.
func (s *session) handleMCP(m *protocol.Message) {
	rpc, err := m.DecodePayload()
	if err != nil {
		s.badInput("bad_mcp", err)
		return
	}
	s.client.Deliver(rpc)
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
		s.handleIoT(ctx, m.Raw)
	case protocol.TypeHello:
		// One hello per connection; a second one changes nothing (docs/protocol.md §3.3).
		s.link.Event(hub.EventDeviceMessage, map[string]any{"type": m.Type, "note": "repeated hello ignored"})
	default: // listen, abort, goodbye and types the hub does not know
		s.link.Event(hub.EventDeviceMessage, map[string]any{"type": m.Type, "message": json.RawMessage(m.Raw)})
	}
}

func (s *session) handleIoT(ctx context.Context, data []byte) {
	msg, err := protocol.DecodeIoT(data)
	if err != nil {
		s.badInput("bad_iot", err)
		return
	}
	ctx, cancel := persisting(ctx)
	defer cancel()
	if len(msg.Descriptors) > 0 {
		if err := s.link.DescribeThings(ctx, msg.Descriptors); err != nil {
			s.log.Error("could not store IoT descriptors", "err", err)
		}
		s.log.Info("iot descriptors", "things", len(msg.Descriptors))
	}
	if len(msg.States) > 0 {
		states := make([]registry.ThingState, len(msg.States))
		for i, st := range msg.States {
			states[i] = registry.ThingState{Name: st.Name, State: st.State}
		}
		if err := s.link.ReportStates(ctx, states); err != nil {
			s.log.Error("could not store IoT states", "err", err)
		}
		s.log.Info("iot states", "things", len(msg.States))
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
		rctx, cancel := context.WithTimeout(ctx, s.srv.opts.RequestTimeout)
		info, err := s.client.Initialize(rctx)
		cancel()
		if err != nil {
			s.listFailed(err, start)
			s.listMu.Lock()
			s.listing, s.relist = false, false
			s.listMu.Unlock()
			return
		}
		pctx, cancel := persisting(ctx)
		err = s.link.SetServerInfo(pctx, info.Name, info.Version)
		cancel()
		if err != nil {
			s.log.Error("could not store server info", "err", err)
		}
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

func (s *session) listOnce(ctx context.Context, start time.Time) {
	rctx, cancel := context.WithTimeout(ctx, s.srv.opts.RequestTimeout)
	tools, err := s.client.ListTools(rctx)
	cancel()
	if err != nil && !(errors.Is(err, mcpclient.ErrIncomplete) && len(tools) > 0) {
		s.listFailed(err, start)
		return
	}
	if err != nil {
		// Incomplete: a cache that exists is kept; a device with none gets
		// what could be read, and the error is recorded either way.
		s.listFailed(err, start)
		if cached, _, _ := s.srv.opts.Registry.Tools(s.id.DeviceID); len(cached) > 0 {
			return
		}
	}
	pctx, pcancel := persisting(ctx)
	change, serr := s.link.SetTools(pctx, tools)
	pcancel()
	if serr != nil {
		s.log.Error("could not store tools", "err", serr)
	}
	if err == nil {
		d := time.Since(start)
		s.srv.m.Discovered("ok", d.Seconds())
		s.log.Info("tools cached", "tools", len(tools), "ms", float64(d.Microseconds())/1000,
			"added", len(change.Added), "removed", len(change.Removed), "changed", len(change.Changed))
	}
}

func (s *session) listFailed(err error, start time.Time) {
	s.srv.m.Discovered("error", time.Since(start).Seconds())
	s.log.Warn("tool discovery failed", "err", err)
	s.link.ToolsFailed(err)
}

// persisting returns a context for storing what the device reported: the
// device hanging up right after it spoke must not lose what it said, so the
// write ignores the connection's end and has a bound of its own.
func persisting(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
}
