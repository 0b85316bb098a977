// Package session serves the device endpoint (GET /xiaozhi/v1/, WebSocket):
// it checks who is connecting, answers the hello at once, runs the MCP
// discovery or receives legacy IoT descriptors, and relays calls from the
// registry to the device until the connection ends.
package session

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/internal/httperr"
	"github.com/xiaozhi-hub/hub/internal/refusals"
	"github.com/xiaozhi-hub/hub/mcpclient"
	"github.com/xiaozhi-hub/hub/metrics"
	"github.com/xiaozhi-hub/hub/protocol"
	"github.com/xiaozhi-hub/hub/registry"
)

// Options configures the device endpoint. Registry is required.
type Options struct {
	Registry *registry.Registry
	// Authorize decides whether a device may connect; nil admits every
	// device. An error with code EUNAUTHORIZED becomes a 401 with its message.
	Authorize func(r *http.Request, id protocol.Identity) error
	// Refusals limits the log lines of refused handshakes per device and
	// per source address, shared with the hub's other transports (nil:
	// every refusal is logged); every refusal is counted in metrics.
	Refusals *refusals.Reports
	Logger   *slog.Logger
	Metrics  *metrics.Metrics

	// HelloTimeout bounds the wait for the device's hello (default 10 s,
	// the firmware's own wait for ours).
	HelloTimeout time.Duration
	// RequestTimeout bounds each discovery request (default 30 s).
	RequestTimeout time.Duration
	// DiscoveryAttempts bounds the tries of each discovery step
	// (initialize, tools/list) per connection (default 4); the first retry
	// waits DiscoveryBackoff (default 1 s), each later one twice as long.
	DiscoveryAttempts int
	DiscoveryBackoff  time.Duration
	// MaxMessageBytes is the largest frame accepted (default 256 KiB; the
	// firmware sends at most 64 KiB). Larger frames close the connection
	// with status 1009.
	MaxMessageBytes int64
	// TextRate and AudioRate bound frames per second from one device, with
	// bursts of 4× (defaults 100 and 200). A device over its limit is
	// disconnected with status 1008 and a reason.
	TextRate, AudioRate float64
	// PingInterval is how long a connection may be silent before the hub
	// pings it; a device that does not answer within PingTimeout is
	// dropped (defaults 30 s and 15 s).
	PingInterval, PingTimeout time.Duration
	// OriginPatterns allows browser clients from other origins (see
	// websocket.AcceptOptions). Devices send no Origin header.
	OriginPatterns []string
	// Vision is announced to devices in initialize (camera explain endpoint).
	Vision *mcpclient.Vision
	// DownlinkAudio is announced in the server hello.
	DownlinkAudio protocol.AudioParams
	// Version is the hub's version, sent as clientInfo.version.
	Version string
	// Voice holds spoken conversations; nil: audio is counted and dropped.
	Voice Conversations
}

// Server is the device endpoint. It is an http.Handler.
type Server struct {
	opts Options
	log  *slog.Logger
	m    *metrics.Metrics

	ctx    context.Context // parent of every session; cancelled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup // sessions, pingers and closers

	mu       sync.Mutex
	sessions map[*session]struct{}
	closed   bool
	pinging  bool // keepalive runs (from the first session on)
}

// New returns the device endpoint. It starts nothing: the keepalive starts
// with the first session. Call Close to end every session.
func New(opts Options) *Server {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&opts.HelloTimeout, 10*time.Second)
	def(&opts.RequestTimeout, 30*time.Second)
	def(&opts.DiscoveryBackoff, time.Second)
	if opts.DiscoveryAttempts <= 0 {
		opts.DiscoveryAttempts = 4
	}
	def(&opts.PingInterval, 30*time.Second)
	def(&opts.PingTimeout, 15*time.Second)
	if opts.MaxMessageBytes <= 0 {
		opts.MaxMessageBytes = 256 << 10
	}
	if opts.TextRate == 0 {
		opts.TextRate = 100
	}
	if opts.AudioRate == 0 {
		opts.AudioRate = 200
	}
	if opts.DownlinkAudio.Format == "" {
		opts.DownlinkAudio = protocol.DefaultDownlinkAudio
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Server{opts: opts, log: opts.Logger, m: opts.Metrics, ctx: ctx, cancel: cancel, sessions: map[*session]struct{}{}}
}

// ServeHTTP upgrades a device's request and hands the connection to a
// session goroutine owned by the Server.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := checkOrigin(r, s.opts.OriginPatterns); err != nil {
		s.m.Handshake("forbidden_origin")
		s.log.Info("device connection refused", "remote", r.RemoteAddr, "reason", hub.ErrorMessage(err))
		httpError(w, http.StatusForbidden, err)
		return
	}
	id, err := protocol.ParseIdentity(r)
	if err != nil {
		s.m.Handshake("bad_request")
		httpError(w, http.StatusBadRequest, err)
		return
	}
	if s.opts.Authorize != nil {
		if err := s.opts.Authorize(r, id); err != nil {
			s.m.Handshake("unauthorized")
			if ok, skipped := s.opts.Refusals.Allow(time.Now(), refusals.Address(hub.SourceKey(r.RemoteAddr)), refusals.Device(id.DeviceID)); ok {
				s.log.Warn("device refused", "device", id.DeviceID, "remote", r.RemoteAddr, "reason", hub.ErrorMessage(err), "unreportedBefore", skipped)
			}
			// 401 for a refusal, 503 when a cluster's shared state does
			// not answer (the device retries), 500 for the hub's own fault.
			httpError(w, httperr.Status(hub.ErrorCode(err)), err)
			return
		}
	}
	sb := &smallBuffers{ResponseWriter: w}
	c, err := websocket.Accept(sb, r, &websocket.AcceptOptions{OriginPatterns: s.opts.OriginPatterns})
	if err != nil {
		s.m.Handshake("upgrade_failed")
		s.log.Info("websocket upgrade failed", "device", id.DeviceID, "remote", r.RemoteAddr, "err", err)
		return
	}
	c.SetReadLimit(s.opts.MaxMessageBytes)
	s.Serve(newWSConn(c, id.ProtocolVersion, newReadiness(sb.conn, sb.reads, sb.br)), id, r.RemoteAddr)
}

// Serve runs the session of a connection from any transport whose device
// has been identified and admitted: the handshake (hello) runs on the
// caller's goroutine, then the connection is served on a goroutine owned
// by the Server until it ends. Serve returns after the handshake; it
// reports whether the connection is being served.
func (s *Server) Serve(c Connection, id protocol.Identity, remote string) bool {
	return s.serve(newSession(s, c, id, remote), (*session).open)
}

// ServeIdle runs the session of a connection whose device is connected
// while idle (see Idle), identified and admitted by its transport: the
// device is online and its MCP tools are discovered at once, the way the
// official MQTT gateway does it on every connect (firmware 2.x serves MCP
// with no conversation open). It returns at once, with the Inbox the
// transport pushes the device's messages to; nil when the Server is
// closed (the connection is then closed).
func (s *Server) ServeIdle(c Idle, id protocol.Identity, remote string) Inbox {
	sess := newSession(s, pushed{c}, id, remote)
	sess.idle = c
	end, ok := s.register(sess)
	if !ok {
		return nil
	}
	return sess.attach(s.ctx, end)
}

// serve registers sess, runs open on the caller's goroutine and then the
// read loop on a goroutine of the Server's.
func (s *Server) serve(sess *session, open func(*session, context.Context) bool) bool {
	end, ok := s.register(sess)
	if !ok {
		return false
	}
	// The handshake runs here; the connection is then served on a goroutine
	// of its own, so that net/http's per-request state is released now (it
	// would cost memory on every idle device) and the long-lived goroutine
	// starts with a small stack, not one grown by the handshake.
	if !open(sess, s.ctx) {
		end()
		return false
	}
	go func() {
		defer end()
		sess.serve()
	}()
	return true
}

// register adds sess to the Server's sessions (the keepalive starts with
// the first); end removes it. It reports false, and closes the
// connection, when the Server is closed.
func (s *Server) register(sess *session) (end func(), ok bool) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		sess.c.Close(CloseGoingAway, "hub shutting down")
		return nil, false
	}
	s.sessions[sess] = struct{}{}
	s.wg.Add(1)
	if !s.pinging {
		s.pinging = true
		s.wg.Add(1)
		go s.keepalive()
	}
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		delete(s.sessions, sess)
		s.mu.Unlock()
		s.wg.Done()
	}, true
}

// Close ends every session (their devices see the socket close) and waits
// for all of the Server's goroutines.
func (s *Server) Close() {
	s.mu.Lock()
	s.closed = true
	var reading []*session
	for sess := range s.sessions {
		if sess.idle == nil { // an idle session's connection closes with its context (attach)
			reading = append(reading, sess)
		}
	}
	s.mu.Unlock()
	s.cancel()
	for _, sess := range reading {
		sess.c.CloseNow() // its read loop ends "closed by the hub"
	}
	s.wg.Wait()
}

// go runs f on a goroutine the Server waits for at Close.
func (s *Server) goOwned(f func()) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		f()
	}()
}

// keepalive pings connections that have been silent for PingInterval and
// drops those that do not answer: a device that lost power leaves a
// half-open TCP connection behind, and only a ping finds it.
func (s *Server) keepalive() {
	defer s.wg.Done()
	t := time.NewTicker(s.opts.PingInterval / 2)
	defer t.Stop()
	sem := make(chan struct{}, 256) // pings in flight
	for {
		select {
		case <-s.ctx.Done():
			return
		case now := <-t.C:
			s.mu.Lock()
			var idle []*session
			for sess := range s.sessions {
				if now.Sub(sess.lastActive()) >= s.opts.PingInterval {
					idle = append(idle, sess)
				}
			}
			s.mu.Unlock()
			for _, sess := range idle {
				select {
				case sem <- struct{}{}:
				case <-s.ctx.Done():
					return
				}
				s.goOwned(func() {
					defer func() { <-sem }()
					sess.ping(s.ctx, s.opts.PingTimeout)
				})
			}
		}
	}
}

func httpError(w http.ResponseWriter, status int, err error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{
		"code": hub.ErrorCode(err), "message": hub.ErrorMessage(err),
	}})
}
