package udpaudio

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"

	hub "github.com/xiaozhi-hub/hub"
)

// Config bounds what a Server spends. Zero fields take the defaults.
type Config struct {
	// MaxSessions is the most sessions open at once (default 4096).
	MaxSessions int
	// QueueLen is how many decrypted frames wait for a session's reader
	// before newer ones are dropped (default 32, about 2 s of 60 ms frames).
	QueueLen int
	// IdleTimeout ends a session with no datagram either way and no Touch
	// for this long (default 120 s, the firmware's own channel timeout).
	IdleTimeout time.Duration
	// AddrRate is how many datagrams per second one source IP may send
	// before the excess is dropped unread (default 100; a device sends about
	// 17 a second). The burst is one second's worth.
	AddrRate int
	// MaxAddrs is how many source IPs are rate-limited one by one (default
	// 4096); beyond that, new addresses share one bucket.
	MaxAddrs int
	Logger   *slog.Logger
}

func (c *Config) defaults() {
	if c.MaxSessions <= 0 {
		c.MaxSessions = 4096
	}
	if c.QueueLen <= 0 {
		c.QueueLen = 32
	}
	if c.IdleTimeout <= 0 {
		c.IdleTimeout = 120 * time.Second
	}
	if c.AddrRate <= 0 {
		c.AddrRate = 100
	}
	if c.MaxAddrs <= 0 {
		c.MaxAddrs = 4096
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// Stats counts datagrams since the server started. Every dropped datagram
// is counted once, under its first failed rule.
type Stats struct {
	Received       uint64 // datagrams read
	Accepted       uint64 // decrypted and queued for a session
	Sent           uint64 // datagrams sent to devices
	DroppedFlood   uint64 // over the per-address rate
	DroppedShape   uint64 // short, wrong type or length mismatch
	DroppedUnknown uint64 // no open session has this connection id
	DroppedAddr    uint64 // from another address than the session learned
	DroppedFlags   uint64 // flags not the uplink value (e.g. our own downlink reflected)
	DroppedOld     uint64 // sequence replayed or late
	DroppedQueue   uint64 // the session's reader is behind
}

type counters struct {
	received, accepted, sent                        atomic.Uint64
	flood, shape, unknown, addr, flags, old, queued atomic.Uint64
}

// Server owns one UDP socket shared by every session. Datagrams are routed
// by the connection id (ssrc) in their header; a bad datagram is counted
// and dropped without touching any other session.
type Server struct {
	conn  *net.UDPConn
	cfg   Config
	now   func() time.Time
	stats counters

	mu       sync.Mutex
	sessions map[uint32]*Session

	// Only the read loop touches these.
	addrs    map[netip.Addr]*bucket
	overflow bucket
}

// Listen opens the UDP socket at addr (host:port or :port; port 0 picks one).
func Listen(addr string, cfg Config) (*Server, error) {
	ua, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, hub.Errorf(hub.EINVALID, "UDP audio address %q is not host:port: %w", addr, err)
	}
	conn, err := net.ListenUDP("udp", ua)
	if err != nil {
		return nil, hub.Errorf(hub.EINVALID, "cannot listen for UDP audio on %s: %w", addr, err)
	}
	return New(conn, cfg), nil
}

// New returns a server reading conn; Run closes conn when it returns.
func New(conn *net.UDPConn, cfg Config) *Server {
	cfg.defaults()
	return &Server{
		conn:     conn,
		cfg:      cfg,
		now:      time.Now,
		sessions: make(map[uint32]*Session),
		addrs:    make(map[netip.Addr]*bucket),
	}
}

// Addr is the socket's local address.
func (s *Server) Addr() netip.AddrPort { return s.conn.LocalAddr().(*net.UDPAddr).AddrPort() }

// Stats returns the counters.
func (s *Server) Stats() Stats {
	c := &s.stats
	return Stats{
		Received: c.received.Load(), Accepted: c.accepted.Load(), Sent: c.sent.Load(),
		DroppedFlood: c.flood.Load(), DroppedShape: c.shape.Load(), DroppedUnknown: c.unknown.Load(),
		DroppedAddr: c.addr.Load(), DroppedFlags: c.flags.Load(), DroppedOld: c.old.Load(), DroppedQueue: c.queued.Load(),
	}
}

// Sessions is the number of open sessions.
func (s *Server) Sessions() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sessions)
}

// NewSession opens a session with a fresh connection id, key and nonce.
// Advertise it in the server hello with Session.Hello.
func (s *Server) NewSession() (*Session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sessions == nil {
		return nil, ErrClosed
	}
	if len(s.sessions) >= s.cfg.MaxSessions {
		return nil, hub.Errorf(hub.ECONFLICT, "too many UDP audio sessions open (%d); try again when a conversation ends", s.cfg.MaxSessions)
	}
	var id uint32
	for id == 0 || s.sessions[id] != nil {
		var b [4]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, fmt.Errorf("udpaudio: connection id: %w", err)
		}
		id = binary.BigEndian.Uint32(b[:])
	}
	keys, err := NewKeys(id)
	if err != nil {
		return nil, err
	}
	ss := &Session{
		srv:    s,
		keys:   keys,
		block:  keys.block(),
		frames: make(chan Frame, s.cfg.QueueLen),
		done:   make(chan struct{}),
		last:   s.now(),
	}
	s.sessions[id] = ss
	return ss, nil
}

func (s *Server) remove(id uint32, ss *Session) {
	s.mu.Lock()
	if s.sessions[id] == ss {
		delete(s.sessions, id)
	}
	s.mu.Unlock()
}

// Run reads datagrams until ctx ends, then closes every session and the
// socket. Stale sessions and idle rate-limit entries are swept about once a
// second, from the same loop.
func (s *Server) Run(ctx context.Context) error {
	stop := context.AfterFunc(ctx, func() { _ = s.conn.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()
	defer s.shutdown()

	buf := make([]byte, 2048) // > MaxDatagram, so over-long datagrams fail the length rule
	nextSweep := s.now().Add(time.Second)
	_ = s.conn.SetReadDeadline(nextSweep)
	for {
		n, from, err := s.conn.ReadFromUDPAddrPort(buf)
		if ctx.Err() != nil {
			return nil
		}
		now := s.now()
		switch {
		case errors.Is(err, net.ErrClosed):
			return fmt.Errorf("udpaudio: read: %w", err)
		case errors.Is(err, os.ErrDeadlineExceeded):
		case err != nil:
			s.cfg.Logger.Debug("udp audio read", "err", err)
		default:
			s.receive(buf[:n], from, now)
		}
		if !now.Before(nextSweep) {
			s.sweep(now)
			nextSweep = now.Add(time.Second)
			_ = s.conn.SetReadDeadline(nextSweep)
		}
	}
}

func (s *Server) shutdown() {
	s.mu.Lock()
	all := s.sessions
	s.sessions = nil
	s.mu.Unlock()
	for _, ss := range all {
		ss.end()
	}
	_ = s.conn.Close()
}

// receive handles one datagram; only the read loop calls it.
func (s *Server) receive(b []byte, from netip.AddrPort, now time.Time) {
	s.stats.received.Add(1)
	if !s.allow(from.Addr().Unmap(), now) {
		s.stats.flood.Add(1)
		return
	}
	h, err := ParseHeader(b)
	if err != nil {
		s.stats.shape.Add(1)
		return
	}
	s.mu.Lock()
	ss := s.sessions[h.SSRC]
	s.mu.Unlock()
	if ss == nil {
		s.stats.unknown.Add(1)
		return
	}
	ss.receive(h, b, from, now)
}

// sweep ends sessions idle for longer than IdleTimeout and forgets
// rate-limit entries that have refilled.
func (s *Server) sweep(now time.Time) {
	var stale []*Session
	s.mu.Lock()
	for _, ss := range s.sessions {
		if now.Sub(ss.lastActive()) > s.cfg.IdleTimeout {
			stale = append(stale, ss)
		}
	}
	s.mu.Unlock()
	for _, ss := range stale {
		s.cfg.Logger.Debug("udp audio session idle, closing", "ssrc", ss.keys.SSRC())
		ss.Close()
	}
	for ip, b := range s.addrs {
		if now.Sub(b.last) > 2*time.Second {
			delete(s.addrs, ip)
		}
	}
}

// bucket is a token bucket of datagrams for one source IP.
type bucket struct {
	tokens float64
	last   time.Time
}

func (s *Server) allow(ip netip.Addr, now time.Time) bool {
	b := s.addrs[ip]
	if b == nil {
		if len(s.addrs) < s.cfg.MaxAddrs {
			b = &bucket{tokens: float64(s.cfg.AddrRate), last: now}
			s.addrs[ip] = b
		} else {
			b = &s.overflow
		}
	}
	rate := float64(s.cfg.AddrRate)
	b.tokens = min(rate, b.tokens+now.Sub(b.last).Seconds()*rate)
	b.last = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}
