package udpaudio

import (
	"crypto/cipher"
	"net/netip"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// The sequence and address rules (docs/protocol.md §4.3).
const (
	// A datagram's sequence may be at most seqSlack + seqPerSecond per
	// second since the last accepted datagram above that one's: a device
	// sends 17 to 50 a second, so only a forged jump (0xFFFFFFFF, which
	// would make every later frame "old") is refused, and a device whose
	// datagrams were lost for a while is let in again.
	seqSlack     = 64
	seqPerSecond = 100
	// rebindQuiet is how long a session's address must have sent nothing
	// before a datagram from another port of the same IP may take its place
	// (a NAT rebinding comes after silence; a talking device sends every
	// 60 ms, so junk from its IP cannot move its channel).
	rebindQuiet = time.Second
)

// Frame is one decrypted uplink Opus frame.
type Frame struct {
	Timestamp uint32 // as the device sent it (0 unless server AEC is on)
	Sequence  uint32
	Opus      []byte    // owned by the receiver
	Arrived   time.Time // when the hub accepted it (monotonic), to keep it in order with the device's MQTT messages
}

// Session is one device's audio channel: its keys, the address bound by
// its first valid datagram, and the sequence counters of both directions.
// It lives from one accepted server hello to the goodbye (or IdleTimeout);
// a new hello needs a new Session.
type Session struct {
	srv       *Server
	keys      Keys
	block     cipher.Block
	peer      netip.Addr // the device's MQTT peer IP; zero if unknown
	quota     netip.Addr // quotaKey(peer)
	frames    chan Frame
	done      chan struct{}
	limit     *rate.Limiter // datagrams from the bound address
	bindLimit *rate.Limiter // datagrams from anywhere else

	mu       sync.Mutex
	addr     netip.AddrPort // bound address: zero until the first valid uplink datagram
	upSeq    uint32         // last accepted uplink sequence
	lastUp   time.Time      // when it was accepted (the session's start before)
	homeSeq  uint32         // last sequence accepted from the peer IP
	homeLast time.Time      // when
	proven   bool           // a datagram was accepted
	downSeq  uint32         // last sent downlink sequence
	last     time.Time      // last activity either way, or Touch
	closed   bool
	sendBuf  []byte
}

// ID is the connection id (ssrc) in the session's nonce.
func (ss *Session) ID() uint32 { return ss.keys.SSRC() }

// Hello returns the `udp` object for the server hello, advertising
// host:port: the address the device will connect its socket to, which must
// reach this server's socket (downlink leaves from it, and the device
// accepts datagrams only from the address it connected to).
func (ss *Session) Hello(host string, port int) HelloUDP { return ss.keys.Hello(host, port) }

// Frames delivers decrypted uplink frames in sequence order; it is closed
// when the session ends. If the reader falls QueueLen frames behind, newer
// frames are dropped (counted in Stats.DroppedQueue).
func (ss *Session) Frames() <-chan Frame { return ss.frames }

// Done is closed when the session ends (Close, IdleTimeout or server stop).
func (ss *Session) Done() <-chan struct{} { return ss.done }

// Addr is the device's address, once its first valid datagram arrived.
func (ss *Session) Addr() (netip.AddrPort, bool) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.addr, ss.addr.IsValid()
}

// Touch counts as activity for IdleTimeout (call it for MQTT messages of
// the session: the device sends no audio while it speaks or thinks).
func (ss *Session) Touch() {
	ss.mu.Lock()
	ss.last = ss.srv.now()
	ss.mu.Unlock()
}

func (ss *Session) lastActive() time.Time {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.last
}

// value is what decides which session makes room for a new one: whether
// a datagram was ever accepted, and the last activity.
func (ss *Session) value() (proven bool, last time.Time) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.proven, ss.last
}

// Close ends the session; later datagrams with its id are unknown.
func (ss *Session) Close() {
	ss.srv.remove(ss)
	ss.end()
}

func (ss *Session) end() {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if !ss.closed {
		ss.closed = true
		close(ss.frames)
		close(ss.done)
	}
}

// receive applies the session rules to a datagram whose length and shape
// were checked: uplink flags, a per-session budget, the bound address, a
// sequence above the last accepted one by less than the jump bound (gaps
// are fine, as in the firmware). A datagram from another address may bind
// it only if it proves itself (bindFrom). Only the read loop calls it.
func (ss *Session) receive(h Header, b []byte, from netip.AddrPort, now time.Time) {
	st := &ss.srv.stats
	if h.Flags != uplinkFlags {
		st.flags.Add(1)
		return
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.closed {
		st.unknown.Add(1)
		return
	}
	if ss.addr.IsValid() && from == ss.addr {
		if !ss.limit.AllowN(now, 1) {
			st.flood.Add(1)
			return
		}
		if ss.sequenceOK(h.Sequence, ss.upSeq, ss.lastUp, now) {
			ss.accept(h, Open(nil, ss.block, b), from, now)
		}
		return
	}
	// From another address: junk from a NAT neighbour or a spoofed
	// source spends this budget, never the bound address's.
	if !ss.bindLimit.AllowN(now, 1) {
		st.flood.Add(1)
		return
	}
	base, since, ok := ss.bindFrom(from, now)
	if !ok {
		st.addr.Add(1)
		return
	}
	if !ss.sequenceOK(h.Sequence, base, since, now) {
		return
	}
	opus := Open(nil, ss.block, b)
	if !plausibleOpus(opus) {
		st.addr.Add(1)
		return
	}
	ss.addr = from
	ss.accept(h, opus, from, now)
}

// bindFrom says whether a datagram from `from`, which is not the bound
// address, may bind it, and which accepted sequence (and when) its
// sequence must follow:
//   - no address bound yet: any address may, the first plausible datagram
//     wins;
//   - from the MQTT peer's IP while another IP is bound: at once (the
//     device's own IP takes its channel back from a stranger who spoke
//     first), following the last sequence accepted from that IP;
//   - from another port of the bound IP: once the bound port has been
//     quiet for rebindQuiet (the NAT gave the device a new port);
//   - from any other IP: never.
//
// ss.mu is held.
func (ss *Session) bindFrom(from netip.AddrPort, now time.Time) (base uint32, since time.Time, ok bool) {
	fromHome := ss.peer.IsValid() && from.Addr() == ss.peer
	switch {
	case !ss.addr.IsValid():
		return ss.upSeq, ss.lastUp, true
	case fromHome && ss.addr.Addr() != ss.peer:
		return ss.homeSeq, ss.homeLast, true
	case from.Addr() == ss.addr.Addr() && now.Sub(ss.lastUp) >= rebindQuiet:
		return ss.upSeq, ss.lastUp, true
	}
	return 0, time.Time{}, false
}

// sequenceOK checks seq against the last accepted sequence base, accepted
// at since, and counts a refusal. ss.mu is held.
func (ss *Session) sequenceOK(seq, base uint32, since, now time.Time) bool {
	if seq <= base {
		ss.srv.stats.old.Add(1)
		return false
	}
	window := uint64(seqSlack)
	if d := now.Sub(since); d > 0 {
		window += uint64(d.Seconds() * seqPerSecond)
	}
	if uint64(seq-base) > window {
		ss.srv.stats.jump.Add(1)
		return false
	}
	return true
}

// accept records a datagram that passed every rule and queues its frame.
// ss.mu is held.
func (ss *Session) accept(h Header, opus []byte, from netip.AddrPort, now time.Time) {
	ss.upSeq, ss.lastUp, ss.last, ss.proven = h.Sequence, now, now, true
	if ss.peer.IsValid() && from.Addr() == ss.peer {
		ss.homeSeq, ss.homeLast = h.Sequence, now
	}
	select {
	case ss.frames <- Frame{Timestamp: h.Timestamp, Sequence: h.Sequence, Opus: opus, Arrived: time.Now()}:
		ss.srv.stats.accepted.Add(1)
	default:
		ss.srv.stats.queued.Add(1)
	}
}

// Send encrypts one Opus frame and sends it to the device's learned
// address, with the next downlink sequence (the first is 1, as the
// firmware requires after each hello). Sends are serialised per session so
// sequences reach the socket in order.
func (ss *Session) Send(opus []byte, timestamp uint32) error {
	if len(opus) > MaxPayload {
		return ErrTooLarge
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.closed {
		return ErrClosed
	}
	if !ss.addr.IsValid() {
		return ErrNoAddress
	}
	ss.downSeq++
	h := Header{Type: PacketType, Flags: downlinkFlags, SSRC: ss.keys.SSRC(), Timestamp: timestamp, Sequence: ss.downSeq}
	ss.sendBuf = Seal(ss.sendBuf[:0], ss.block, h, opus)
	ss.last = ss.srv.now()
	if _, err := ss.srv.conn.WriteToUDPAddrPort(ss.sendBuf, ss.addr); err != nil {
		return err
	}
	ss.srv.stats.sent.Add(1)
	return nil
}
