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

	"golang.org/x/time/rate"

	hub "github.com/xiaozhi-hub/hub"
)

// Config bounds what a Server spends. Zero fields take the defaults.
type Config struct {
	// MaxSessions is the most sessions open at once (default 4096). A new
	// session when the table is full takes the place of another one (see
	// NewSessionFrom): it is never refused.
	MaxSessions int
	// MaxSessionsPerAddr is the most sessions open at once for the devices
	// of one MQTT peer address (default 16): a new session over the quota
	// takes the place of that address's least valuable session.
	MaxSessionsPerAddr int
	// QueueLen is how many decrypted frames wait for a session's reader
	// before newer ones are dropped (default 32, about 2 s of 60 ms frames).
	QueueLen int
	// IdleTimeout ends a session with no datagram either way and no Touch
	// for this long (default 120 s, the firmware's own channel timeout).
	IdleTimeout time.Duration
	// AddrRate is how many datagrams per second one source IP may send
	// that name no open session (default 100); the excess is counted as a
	// flood. The burst is one second's worth.
	AddrRate int
	// SessionRate is how many datagrams per second a session accepts from
	// its device's address (default 100; a device sends about 17 a second,
	// 50 with 20 ms frames), and, separately, how many attempts per second
	// to bind a new address it examines. The burst is one second's worth.
	SessionRate int
	// MaxAddrs is how many source IPs are rate-limited one by one (default
	// 4096); beyond that, new addresses share one bucket.
	MaxAddrs int
	Logger   *slog.Logger
}

func (c *Config) defaults() {
	if c.MaxSessions <= 0 {
		c.MaxSessions = 4096
	}
	if c.MaxSessionsPerAddr <= 0 {
		c.MaxSessionsPerAddr = 16
	}
	if c.SessionRate <= 0 {
		c.SessionRate = 100
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
	DroppedLong    uint64 // longer than MaxDatagram (1,500 bytes)
	DroppedShape   uint64 // short, wrong type or length mismatch
	DroppedFlood   uint64 // over the per-address or per-session rate
	DroppedUnknown uint64 // no open session has this connection id
	DroppedFlags   uint64 // flags not the uplink value (e.g. our own downlink reflected)
	DroppedAddr    uint64 // from another address than the session's, and not allowed to bind it
	DroppedOld     uint64 // sequence replayed or late
	DroppedJump    uint64 // sequence too far ahead of the last accepted one
	DroppedQueue   uint64 // the session's reader is behind
	// Reclaimed counts sessions ended to make room for a new one (the
	// table or the peer address's quota was full).
	Reclaimed uint64
}

type counters struct {
	received, accepted, sent                                          atomic.Uint64
	long, shape, flood, unknown, flags, addr, old, jump, queued, recl atomic.Uint64
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
	byPeer   map[netip.Addr][]*Session // open sessions by quotaKey of the MQTT peer address (zero: unknown)

	// Only the read loop touches these.
	addrs    map[netip.Addr]*rate.Limiter
	overflow *rate.Limiter
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
		byPeer:   make(map[netip.Addr][]*Session),
		addrs:    make(map[netip.Addr]*rate.Limiter),
		overflow: rate.NewLimiter(rate.Limit(cfg.AddrRate), cfg.AddrRate),
	}
}

// Addr is the socket's local address.
func (s *Server) Addr() netip.AddrPort { return s.conn.LocalAddr().(*net.UDPAddr).AddrPort() }

// Stats returns the counters.
func (s *Server) Stats() Stats {
	c := &s.stats
	return Stats{
		Received: c.received.Load(), Accepted: c.accepted.Load(), Sent: c.sent.Load(),
		DroppedLong: c.long.Load(), DroppedShape: c.shape.Load(), DroppedFlood: c.flood.Load(),
		DroppedUnknown: c.unknown.Load(), DroppedFlags: c.flags.Load(), DroppedAddr: c.addr.Load(),
		DroppedOld: c.old.Load(), DroppedJump: c.jump.Load(), DroppedQueue: c.queued.Load(),
		Reclaimed: c.recl.Load(),
	}
}

// Sessions is the number of open sessions.
func (s *Server) Sessions() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sessions)
}

// NewSession opens a session whose device's MQTT address is unknown; see
// NewSessionFrom.
func (s *Server) NewSession() (*Session, error) { return s.NewSessionFrom(netip.Addr{}) }

// NewSessionFrom opens a session with a fresh connection id, key and
// nonce for a device whose MQTT connection comes from peer (the zero Addr
// if unknown). Advertise it in the server hello with Session.Hello.
//
// A new session is never refused for want of room: when peer already
// holds MaxSessionsPerAddr sessions, the least valuable of them ends; when
// the table holds MaxSessions, the least valuable session of an address
// holding the most ends. The least valuable is one that never received a
// valid datagram, else the one quiet for longest. So a flood of hellos
// from one address replaces only its own sessions, and a device's session
// is ended for strangers only if every address holds at most as many
// sessions as its own (docs/protocol.md §4.3).
func (s *Server) NewSessionFrom(peer netip.Addr) (*Session, error) {
	peer = peer.Unmap()
	var id uint32
	for id == 0 {
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
	now := s.now()
	ss := &Session{
		srv:       s,
		keys:      keys,
		block:     keys.block(),
		peer:      peer,
		quota:     quotaKey(peer),
		frames:    make(chan Frame, s.cfg.QueueLen),
		done:      make(chan struct{}),
		last:      now,
		lastUp:    now,
		homeLast:  now,
		limit:     rate.NewLimiter(rate.Limit(s.cfg.SessionRate), s.cfg.SessionRate),
		bindLimit: rate.NewLimiter(rate.Limit(s.cfg.SessionRate), s.cfg.SessionRate),
	}

	s.mu.Lock()
	if s.sessions == nil {
		s.mu.Unlock()
		return nil, ErrClosed
	}
	if s.sessions[id] != nil { // 1 in 2^32/4096: draw again
		s.mu.Unlock()
		return s.NewSessionFrom(peer)
	}
	var victim *Session
	switch {
	case peer.IsValid() && len(s.byPeer[ss.quota]) >= s.cfg.MaxSessionsPerAddr:
		victim = leastValuable(s.byPeer[ss.quota])
	case len(s.sessions) >= s.cfg.MaxSessions:
		var heaviest []*Session
		for _, list := range s.byPeer {
			if len(list) > len(heaviest) {
				heaviest = list
			}
		}
		victim = leastValuable(heaviest)
	}
	if victim != nil {
		s.removeLocked(victim)
	}
	s.sessions[id] = ss
	s.byPeer[ss.quota] = append(s.byPeer[ss.quota], ss)
	s.mu.Unlock()

	if victim != nil {
		s.stats.recl.Add(1)
		s.cfg.Logger.Info("udp audio session reclaimed for a new one", "ssrc", victim.ID(), "peer", victim.peer, "for", peer)
		victim.end()
	}
	return ss, nil
}

// quotaKey is the address whose quota a session of peer uses: the IPv4
// address, or the /64 of an IPv6 one (one subscriber's network, as the OTA
// limits count it).
func quotaKey(peer netip.Addr) netip.Addr {
	if peer.Is6() {
		p, _ := peer.Prefix(64)
		return p.Addr()
	}
	return peer
}

// leastValuable picks the session to end for a new one among list (the
// sessions of one peer address): one that never received a valid
// datagram, else the one quiet for longest. s.mu is held.
func leastValuable(list []*Session) *Session {
	var best *Session
	var bestProven bool
	var bestLast time.Time
	for _, o := range list {
		proven, last := o.value()
		if best == nil || !proven && bestProven || proven == bestProven && last.Before(bestLast) {
			best, bestProven, bestLast = o, proven, last
		}
	}
	return best
}

// removeLocked takes ss out of the table; s.mu is held.
func (s *Server) removeLocked(ss *Session) {
	if s.sessions[ss.ID()] != ss {
		return
	}
	delete(s.sessions, ss.ID())
	list := s.byPeer[ss.quota]
	for i, o := range list {
		if o == ss {
			list[i] = list[len(list)-1]
			list[len(list)-1] = nil
			list = list[:len(list)-1]
			break
		}
	}
	if len(list) == 0 {
		delete(s.byPeer, ss.quota)
	} else {
		s.byPeer[ss.quota] = list
	}
}

func (s *Server) remove(ss *Session) {
	s.mu.Lock()
	s.removeLocked(ss)
	s.mu.Unlock()
}

// Run reads datagrams until ctx ends, then closes every session and the
// socket. Stale sessions and idle rate-limit entries are swept about once a
// second, from the same loop.
func (s *Server) Run(ctx context.Context) error {
	stop := context.AfterFunc(ctx, func() { _ = s.conn.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()
	defer s.shutdown()

	buf := make([]byte, 2048) // > MaxDatagram, so over-long datagrams are seen as such
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

// receive handles one datagram; only the read loop calls it. The length
// and shape rules come first (they cost nothing), then the session lookup:
// a datagram naming a session is charged to that session's budgets, so
// junk from the device's own IP (a NAT neighbour, a spoofed source) cannot
// spend the device's; one naming none is charged to its source IP's.
func (s *Server) receive(b []byte, from netip.AddrPort, now time.Time) {
	s.stats.received.Add(1)
	if len(b) > MaxDatagram {
		s.stats.long.Add(1)
		return
	}
	h, err := ParseHeader(b)
	if err != nil {
		s.stats.shape.Add(1)
		return
	}
	from = netip.AddrPortFrom(from.Addr().Unmap(), from.Port())
	s.mu.Lock()
	ss := s.sessions[h.SSRC]
	s.mu.Unlock()
	if ss == nil {
		if !s.allow(from.Addr(), now) {
			s.stats.flood.Add(1)
			return
		}
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
	for ip, l := range s.addrs {
		if l.TokensAt(now) >= float64(l.Burst()) {
			delete(s.addrs, ip)
		}
	}
}

// allow charges one datagram to the budget of source IP ip; beyond
// MaxAddrs addresses, new ones share one budget.
func (s *Server) allow(ip netip.Addr, now time.Time) bool {
	l := s.addrs[ip]
	if l == nil {
		if len(s.addrs) >= s.cfg.MaxAddrs {
			return s.overflow.AllowN(now, 1)
		}
		l = rate.NewLimiter(rate.Limit(s.cfg.AddrRate), s.cfg.AddrRate)
		s.addrs[ip] = l
	}
	return l.AllowN(now, 1)
}
