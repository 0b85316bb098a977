package session

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/mcpclient"
	"github.com/xiaozhi-hub/hub/protocol"
	"github.com/xiaozhi-hub/hub/registry"
)

// attach starts the session of a device that is connected while idle
// (ServeIdle): there is no hello to wait for. The device is registered
// online and its tools are discovered at once. Firmware on MQTT announces
// nothing before its first conversation, so MCP is assumed, as the official
// gateway assumes it: 1.x firmware never answers, discovery gives up after
// its attempts, and the device's IoT things arrive in its first
// conversation. It always succeeds; end unregisters the session from its
// Server once it is over.
func (s *session) attach(parent context.Context, end func()) Inbox {
	s.ctx, s.cancel = context.WithCancel(parent)
	s.version = s.id.ProtocolVersion
	s.hello = protocol.ClientHello{Version: s.version, MCP: true}
	s.neg = Negotiated{Transport: "mqtt", ProtocolVersion: s.version}
	s.client = mcpclient.New(s.sendMCP, mcpclient.Options{
		Logger:         s.log,
		OnNotification: s.onNotification,
		Vision:         s.srv.opts.Vision,
		ClientVersion:  s.srv.opts.Version,
	})
	s.link = s.srv.opts.Registry.Connect(registry.ConnectInfo{
		DeviceID: s.id.DeviceID, ClientID: s.id.ClientID, ProtocolVersion: s.version, MCP: true, Transport: s.neg.Transport,
	}, s)
	s.link.SaveLater()
	s.srv.m.Handshake("ok")
	in := &inbox{s: s, unregister: end}
	// The Server's Close, or the session's own end, closes the connection;
	// its transport then calls End.
	in.stopClosing = context.AfterFunc(s.ctx, s.c.CloseNow)
	s.connected()
	s.startListing(time.Now(), true)
	return in
}

// inbox is an idle session's Inbox. The session's state that the read loop
// owns on other transports is guarded by mu here: messages from the MQTT
// connection and the conversation's audio arrive on different goroutines.
type inbox struct {
	s           *session
	mu          sync.Mutex  // held while a message is handled, and while the session ends
	over        atomic.Bool // End was called
	stopClosing func() bool // the context.AfterFunc that closes the connection
	unregister  func()
}

func (in *inbox) Receive(m Message) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.over.Load() {
		return
	}
	if err := in.s.receive(in.s.ctx, m); err != nil {
		in.End(endReason(err)) // refused: the connection's Close called End already
	}
}

func (in *inbox) End(reason string) {
	if !in.over.CompareAndSwap(false, true) {
		return
	}
	in.s.srv.goOwned(func() {
		in.mu.Lock() // after the message being handled, if any
		defer in.mu.Unlock()
		in.stopClosing()
		in.s.ended(&EndError{Reason: reason, Err: errIdleEnded})
		in.unregister()
	})
}

var errIdleEnded = errors.New("connection ended")

// pushed is an idle connection as the session's Connection: its messages
// come through the inbox, so it is never read.
type pushed struct{ Idle }

func (pushed) Read(context.Context) (Message, error) {
	return Message{}, errors.New("an idle connection's messages are pushed to its Inbox")
}

// converse answers a hello on an idle connection: it opens a conversation.
// A hello the transport cannot serve (MQTT+UDP: anything but version 3
// over udp) gets no answer, as the official gateway does: the device gives
// up after its 10 s wait and says so on its screen.
func (s *session) converse(ctx context.Context, m protocol.Message) {
	h, err := m.Hello()
	if err != nil {
		s.badInput("bad_hello", err)
		return
	}
	// Each conversation gets its own session id, as from the official
	// gateway: the firmware ends its channel on a goodbye naming its
	// current id, so a late goodbye for this conversation must not end the
	// next (docs/protocol.md §4.4).
	sid := newSessionID()
	neg, err := s.idle.Negotiate(sid, h)
	if err != nil {
		s.badInput("bad_hello", fmt.Errorf("hello not answered: %w", err))
		return
	}
	s.hello, s.neg, s.version, s.convID = h, neg, neg.ProtocolVersion, sid
	if err := s.write(ctx, s.serverHello(), "hello"); err != nil {
		s.log.Info("cannot answer hello", "err", err)
		s.idle.EndConversation()
		s.convID = ""
		return
	}
	s.openConversation()
	s.link.Event(hub.EventDeviceMessage, map[string]any{"type": protocol.TypeHello, "note": "conversation opened", "transport": neg.Transport})
}
