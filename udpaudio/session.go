package udpaudio

import (
	"crypto/cipher"
	"net/netip"
	"sync"
	"time"
)

// Frame is one decrypted uplink Opus frame.
type Frame struct {
	Timestamp uint32 // as the device sent it (0 unless server AEC is on)
	Sequence  uint32
	Opus      []byte // owned by the receiver
}

// Session is one device's audio channel: its keys, the address learned
// from its first valid datagram, and the sequence counters of both
// directions. It lives from one accepted server hello to the goodbye (or
// IdleTimeout); a new hello needs a new Session.
type Session struct {
	srv    *Server
	keys   Keys
	block  cipher.Block
	frames chan Frame
	done   chan struct{}

	mu      sync.Mutex
	addr    netip.AddrPort // zero until the first valid uplink datagram
	upSeq   uint32         // last accepted uplink sequence
	downSeq uint32         // last sent downlink sequence
	last    time.Time
	closed  bool
	sendBuf []byte
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

// Close ends the session; later datagrams with its id are unknown.
func (ss *Session) Close() {
	ss.srv.remove(ss.ID(), ss)
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

// receive applies the session rules to a datagram whose shape was checked:
// uplink flags, the learned source address, a strictly increasing sequence
// (gaps are fine, as in the firmware). Only the read loop calls it.
func (ss *Session) receive(h Header, b []byte, from netip.AddrPort, now time.Time) {
	st := &ss.srv.stats
	if h.Flags != uplinkFlags {
		st.flags.Add(1)
		return
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	switch {
	case ss.closed:
		st.unknown.Add(1)
		return
	case ss.addr.IsValid() && ss.addr != from:
		st.addr.Add(1)
		return
	case h.Sequence <= ss.upSeq:
		st.old.Add(1)
		return
	}
	f := Frame{Timestamp: h.Timestamp, Sequence: h.Sequence, Opus: Open(nil, ss.block, b)}
	if !ss.addr.IsValid() {
		ss.addr = from
	}
	ss.upSeq = h.Sequence
	ss.last = now
	select {
	case ss.frames <- f:
		st.accepted.Add(1)
	default:
		st.queued.Add(1)
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
