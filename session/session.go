package session

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/mcpclient"
	"github.com/xiaozhi-hub/hub/protocol"
	"github.com/xiaozhi-hub/hub/registry"
)

// session is one device connection, whatever its transport (see
// Connection). run owns it: the read loop runs there,
// and every other goroutine of the session (discovery, closers) is owned by
// the Server and ends with the connection.
type session struct {
	srv    *Server
	c      Connection
	idle   Idle // c's, when its device is connected while idle (ServeIdle)
	id     protocol.Identity
	remote string
	sid    string // the session_id we give the device
	// envelope is the start of every MCP message to the device
	// (protocol.EnvelopePrefix of sid).
	envelope []byte
	log      *slog.Logger

	version int // binary framing, from the hello or the header
	hello   protocol.ClientHello
	neg     Negotiated
	link    *registry.Link
	client  *mcpclient.Client // nil for legacy IoT devices
	conv    Conversation      // the open conversation; read loop only
	convID  string            // session id of the idle connection's last answered hello; read loop only
	talking bool              // a hello opened a conversation (conv starts lazily)

	ctx         context.Context    // the session's; ends with the connection
	cancel      context.CancelFunc // ends the session
	closeReason atomic.Pointer[string]
	active      atomic.Int64 // unix nanos of the last frame from the device

	listMu      sync.Mutex // guards listing and relist
	listing     bool       // a discovery goroutine is running
	relist      bool       // list again when it finishes
	iot         iotQueue   // IoT messages waiting to be stored (iot.go)
	textFrames  frameLimit // Options.TextRate (limit.go)
	audioFrames frameLimit // Options.AudioRate
	badFrames   int
}

func newSession(s *Server, c Connection, id protocol.Identity, remote string) *session {
	sess := &session{
		srv: s, c: c, id: id, remote: remote, sid: newSessionID(),
		log: deviceLogger(s.log, id.DeviceID),
	}
	sess.envelope = protocol.EnvelopePrefix(sess.sid)
	sess.active.Store(time.Now().UnixNano())
	return sess
}

func newSessionID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:]) // no quotes or backslashes: the firmware does not escape it (docs/protocol.md §12.25)
}

// open runs the handshake. When it fails, the connection is closed and
// open reports false; otherwise serve must be called.
//
// The session's context has no children while the device is connected:
// a cancelCtx keeps the map of its children, and its Done channel, once it
// had one, and every connected device would keep them (about 0.5 KB). The
// hello's timeout hangs off parent (only the Server's Close ends a session
// that is still in its handshake), discovery's requests off the Server's
// context (the session's end fails them through the MCP client's Close),
// and the Server's Close closes the connections of the read loops itself.
func (s *session) open(parent context.Context) bool {
	ctx, cancel := context.WithCancel(parent)
	s.ctx, s.cancel = ctx, cancel
	if err := s.handshake(parent); err != nil {
		s.log.Info("handshake failed", "remote", s.remote, "err", err)
		if s.link != nil {
			dctx, dcancel := context.WithTimeout(context.Background(), 5*time.Second)
			s.link.Disconnect(dctx, "handshake failed")
			dcancel()
		}
		s.c.CloseNow()
		cancel()
		return false
	}
	return true
}

// serve reads from the connection after a successful open, until it ends.
// An idle device's goroutine waits in here for as long as it is connected,
// so the frames below the read are kept small: a shallow stack lets the GC
// shrink the goroutine's stack to 4 KiB.
func (s *session) serve() {
	s.connected()
	s.ended(s.readLoop(s.ctx))
}

// connected counts the device in. The info log's "device connected" line
// names its firmware, which a device serving MCP tells in its initialize
// reply: for those, discover writes the line (identified); the others have
// theirs here.
func (s *session) connected() {
	s.srv.m.Connected(1)
	s.log.Debug("device session open", "remote", s.remote, "transport", s.neg.Transport, "mcp", s.hello.MCP, "protocolVersion", s.version, "session", s.sid)
	if s.client == nil {
		s.identified("", "")
	}
}

// identified writes the info log's one line for a device's connection:
// its transport, its board and firmware ("" when the device did not say),
// and where it came from.
func (s *session) identified(board, firmware string) {
	fw := strings.TrimSpace(board + " " + firmware)
	if fw == "" {
		fw = "unknown"
	}
	s.log.Info("device connected", "transport", s.neg.Transport, "firmware", fw, "remote", s.remote)
}

// ended cleans up after the read loop returned err.
func (s *session) ended(err error) {
	cancel := s.cancel
	defer cancel()
	defer s.c.CloseNow()
	reason := endReason(err)
	if r := s.closeReason.Load(); r != nil {
		reason = *r
	}
	s.closeConversation()
	// Fail calls in flight at once: the device is gone.
	if s.client != nil {
		s.client.Close(fmt.Errorf("the device disconnected (%s)", reason))
	}
	cancel()
	dctx, dcancel := context.WithTimeout(context.Background(), 5*time.Second)
	s.link.Disconnect(dctx, reason)
	dcancel()
	s.srv.m.Connected(-1)
	s.log.Info("device disconnected", "reason", reason)
}

// handshake waits for the device's hello and answers it at once, before
// any slow work (§12.2), then registers the connection.
func (s *session) handshake(ctx context.Context) error {
	hctx, cancel := context.WithTimeout(ctx, s.srv.opts.HelloTimeout)
	defer cancel()
	for {
		msg, err := s.c.Read(hctx)
		if err != nil {
			s.srv.m.Handshake("no_hello")
			return fmt.Errorf("waiting for hello: %w", err)
		}
		s.touch()
		s.srv.m.Message("in", typeName(msg.Kind, ""), msg.Size)
		if msg.Kind != TextMessage {
			continue // audio before the hello: nothing to do with it yet
		}
		data := protocol.ValidText(msg.Text)
		m, err := protocol.DecodeMessage(data)
		if err != nil || m.Type != protocol.TypeHello {
			s.srv.m.ProtocolError("before_hello")
			continue
		}
		h, err := m.Hello() // the frame is decoded once
		if err != nil {
			s.srv.m.Handshake("bad_hello")
			s.c.Close(CloseProtocol, hub.Truncate([]byte(err.Error()), 120))
			return err
		}
		s.hello = h
		break
	}
	neg, err := s.c.Negotiate(s.sid, s.hello)
	if err != nil {
		s.srv.m.Handshake("bad_hello")
		s.c.Close(CloseProtocol, hub.Truncate([]byte(err.Error()), 120))
		return fmt.Errorf("negotiate: %w", err)
	}
	s.neg, s.version = neg, neg.ProtocolVersion
	if s.hello.MCP {
		s.client = mcpclient.New(s.sendMCP, mcpclient.Options{
			Logger:         s.log,
			OnNotification: s.onNotification,
			Vision:         s.srv.opts.Vision,
			ClientVersion:  s.srv.opts.Version,
		})
	}
	// Registered (in memory) before the hello reply, so that once the
	// device has its hello the API already shows it online.
	s.link = s.srv.opts.Registry.Connect(registry.ConnectInfo{
		DeviceID: s.id.DeviceID, ClientID: s.id.ClientID, ProtocolVersion: s.version,
		Features: s.hello.Features, MCP: s.hello.MCP, Transport: neg.Transport,
	}, s)
	if err := s.write(ctx, s.serverHello(), "hello"); err != nil {
		s.srv.m.Handshake("write_failed")
		return fmt.Errorf("send hello: %w", err)
	}
	// The device is served from memory; its record is written in the
	// background, so that discovery does not wait for a commit.
	s.link.SaveLater()
	s.srv.m.Handshake("ok")
	s.openConversation()
	if s.client != nil {
		s.startListing(time.Now(), true)
	}
	return nil
}

func (s *session) readLoop(ctx context.Context) error {
	// Reads take no context: with one, the WebSocket library registers and
	// removes a callback on it for every frame. The Server's Close closes
	// the connection once instead (see open), and the read's error is then
	// ctx's, as the library reports it.
	for {
		msg, err := s.c.Read(context.Background())
		if err != nil {
			if cerr := ctx.Err(); cerr != nil {
				return &EndError{Reason: "closed by the hub", Err: cerr}
			}
			return err
		}
		if err := s.receive(ctx, msg); err != nil {
			return err
		}
	}
}

// receive handles one message from the device: on the read loop, or on the
// transport's goroutine for an idle connection (inbox.Receive). It returns
// an error when the device is over its budget and was disconnected.
func (s *session) receive(ctx context.Context, msg Message) error {
	now := time.Now()
	s.active.Store(now.UnixNano())
	if msg.Kind == AudioMessage {
		s.srv.m.Message("in", "audio", msg.Size)
		if !s.audioFrames.allow(s.srv.opts.AudioRate, now) {
			return s.refuse(fmt.Sprintf("too many audio frames: the limit is %.0f per second", s.srv.opts.AudioRate))
		}
		if msg.Err != nil {
			s.badInput("audio_frame", msg.Err)
			return nil
		}
		if conv := s.conversation(); conv != nil {
			conv.Audio(msg.Audio.Data, msg.Audio.Timestamp)
		}
		return nil
	}
	return s.handleText(ctx, msg.Text, now)
}

// refuse closes the connection with a reason the peer can read.
func (s *session) refuse(reason string) error {
	s.srv.m.ProtocolError("rate_limited")
	s.closeReason.Store(&reason)
	s.log.Warn("disconnecting device", "reason", reason)
	s.c.Close(ClosePolicy, reason)
	return errors.New(reason)
}

// badInput records a malformed frame. The connection stays: one bad frame
// from a device must not end its conversation. Only the first few per
// connection become events, so a device cannot flood the event log.
func (s *session) badInput(reason string, err error) {
	s.srv.m.ProtocolError(reason)
	s.badFrames++
	if s.badFrames <= 10 || s.badFrames%100 == 0 {
		s.log.Warn("bad input from device", "reason", reason, "err", err, "count", s.badFrames)
		s.link.Event(hub.EventProtocolError, map[string]any{"reason": reason, "error": err.Error(), "count": s.badFrames})
	}
}

func (s *session) touch()                { s.active.Store(time.Now().UnixNano()) }
func (s *session) lastActive() time.Time { return time.Unix(0, s.active.Load()) }

// ping checks a silent connection and drops it if the device does not
// answer. Transports with a keepalive of their own are not pinged.
func (s *session) ping(ctx context.Context, timeout time.Duration) {
	p, ok := s.c.(pinger)
	if !ok {
		return
	}
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := p.Ping(pctx); err != nil {
		if ctx.Err() == nil {
			reason := "no answer to ping"
			s.closeReason.Store(&reason)
			s.c.CloseNow()
		}
		return
	}
	s.touch()
}

func (s *session) write(ctx context.Context, data []byte, typ string) error {
	if err := s.c.WriteText(ctx, data); err != nil {
		return err
	}
	s.srv.m.Message("out", typ, len(data))
	return nil
}

func (s *session) sendMCP(ctx context.Context, payload []byte) error {
	msg := make([]byte, 0, len(s.envelope)+len(payload)+1)
	return s.write(ctx, protocol.AppendEnvelope(msg, s.envelope, payload), "mcp")
}

// serverHello is the hello reply for the negotiated transport, with the
// conversation's session id on an idle connection (one per hello), the
// connection's otherwise.
func (s *session) serverHello() []byte {
	sid := s.sid
	if s.convID != "" {
		sid = s.convID
	}
	if s.neg.UDP != nil {
		return protocol.ServerHelloUDP(sid, s.srv.opts.DownlinkAudio, *s.neg.UDP)
	}
	return protocol.ServerHello(sid, s.srv.opts.DownlinkAudio)
}

// endReason says in words why the read loop ended with err.
func endReason(err error) string {
	var ee *EndError
	if errors.As(err, &ee) {
		return ee.Reason
	}
	return "connection dropped"
}

func typeName(k MessageKind, typ string) string {
	if k == AudioMessage {
		return "audio"
	}
	switch typ {
	case protocol.TypeHello, protocol.TypeMCP, protocol.TypeIoT, protocol.TypeListen, protocol.TypeAbort:
		return typ
	}
	return "other"
}
