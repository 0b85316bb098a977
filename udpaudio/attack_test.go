package udpaudio

import (
	"bytes"
	"context"
	"math/rand/v2"
	"net"
	"net/netip"
	"testing"
	"time"
)

// voice is a well-formed mono Opus packet (TOC 0x58: SILK wideband 60 ms,
// one frame, as the firmware sends) carrying i.
func voice(i int) []byte {
	return append([]byte{0x58}, bytes.Repeat([]byte{byte(i)}, 40)...)
}

// Junk from the device's own IP on other ports (a NAT neighbour, a
// spoofed source) must not cost the device a frame: 34 frames 60 ms apart,
// each after 20 junk datagrams (unknown connection ids, and the session's
// own id with made-up sequences), all arrive. The rate budget that junk
// spends is the address's and the session's binding budget, not the
// device's.
func TestJunkFromTheDevicesIPDoesNotCostItsFrames(t *testing.T) {
	s := New(nil, Config{})
	ip := netip.MustParseAddr("10.0.0.7")
	ss, err := s.NewSessionFrom(ip)
	if err != nil {
		t.Fatal(err)
	}
	dev := netip.AddrPortFrom(ip, 4000)
	rng := rand.New(rand.NewPCG(1, 2))
	now := time.Unix(1000, 0)
	got := 0
	for i := 1; i <= 34; i++ {
		for j := range 20 {
			junk := make([]byte, HeaderSize+40)
			for k := range junk {
				junk[k] = byte(rng.Uint32())
			}
			ssrc := rng.Uint32()
			if j%2 == 0 {
				ssrc = ss.ID()
			}
			Header{Type: PacketType, Length: 40, SSRC: ssrc, Sequence: rng.Uint32()}.Put(junk)
			s.receive(junk, netip.AddrPortFrom(ip, uint16(5000+j)), now)
		}
		s.receive(Seal(nil, ss.block, Header{Type: PacketType, SSRC: ss.ID(), Sequence: uint32(i)}, voice(i)), dev, now)
		select {
		case f := <-ss.Frames():
			if f.Sequence == uint32(i) && bytes.Equal(f.Opus, voice(i)) {
				got++
			}
		default:
		}
		now = now.Add(60 * time.Millisecond)
	}
	if got != 34 {
		t.Fatalf("the device got %d of its 34 frames through junk from its own IP; stats %+v", got, s.Stats())
	}
	if a, _ := ss.Addr(); a != dev {
		t.Fatalf("the channel moved to %v", a)
	}
}

// A datagram with the session's connection id from another IP arriving
// before the device's first one (even one sealed with the right key, as by
// someone who read the MQTT hello) does not keep the channel: the
// device's own datagrams from its MQTT connection's IP are accepted and
// the hub's audio goes to the device.
func TestForeignFirstDatagramDoesNotCaptureTheChannel(t *testing.T) {
	s := start(t, Config{})
	ss, err := s.NewSessionFrom(netip.MustParseAddr("127.0.0.1"))
	if err != nil {
		t.Fatal(err)
	}
	intruder, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 2)})
	if err != nil {
		t.Skipf("cannot bind a second loopback address: %v", err)
	}
	defer intruder.Close()
	forged := Seal(nil, ss.block, Header{Type: PacketType, SSRC: ss.ID(), Sequence: 1}, voice(99))
	if _, err := intruder.WriteToUDPAddrPort(forged, s.Addr()); err != nil {
		t.Fatal(err)
	}
	if f := recvFrame(t, ss); f.Sequence != 1 { // the stranger spoke first
		t.Fatalf("first frame %+v", f)
	}
	dev := device(t, s, ss)
	for i := 1; i <= 3; i++ {
		if err := dev.SendAudio(voice(i), 0); err != nil {
			t.Fatal(err)
		}
		if f := recvFrame(t, ss); !bytes.Equal(f.Opus, voice(i)) {
			t.Fatalf("device frame %d: got %q (stats %+v)", i, f.Opus, s.Stats())
		}
	}
	if a, _ := ss.Addr(); a.String() != dev.LocalAddr().String() {
		t.Fatalf("channel bound to %v, device is at %v", a, dev.LocalAddr())
	}
	// The stranger cannot take it back.
	_, _ = intruder.WriteToUDPAddrPort(Seal(nil, ss.block, Header{Type: PacketType, SSRC: ss.ID(), Sequence: 10}, voice(98)), s.Addr())
	waitFor(t, "the stranger's datagram refused", func() bool { return s.Stats().DroppedAddr == 1 })
	if err := ss.Send(voice(7), 0); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if f, err := dev.Recv(ctx); err != nil || !bytes.Equal(f.Opus, voice(7)) {
		t.Fatalf("downlink to the device: %v %v", f, err)
	}
}

// One datagram with sequence 0xFFFFFFFF (even from the device's own
// address and key) does not make every later frame "old".
func TestSequenceJumpDoesNotKillLaterFrames(t *testing.T) {
	s := start(t, Config{})
	ss, _ := s.NewSessionFrom(netip.MustParseAddr("127.0.0.1"))
	dev := device(t, s, ss)
	for i := 1; i <= 2; i++ {
		_ = dev.SendAudio(voice(i), 0)
		recvFrame(t, ss)
	}
	_ = dev.SendRaw(Seal(nil, ss.block, Header{Type: PacketType, SSRC: ss.ID(), Sequence: 0xFFFFFFFF}, voice(0)))
	_ = dev.SendRaw(Seal(nil, ss.block, Header{Type: PacketType, SSRC: ss.ID(), Sequence: 2 + 10000}, voice(0)))
	for i := 3; i <= 4; i++ {
		if err := dev.SendAudio(voice(i), 0); err != nil {
			t.Fatal(err)
		}
		if f := recvFrame(t, ss); f.Sequence != uint32(i) {
			t.Fatalf("after the jump got sequence %d, want %d (stats %+v)", f.Sequence, i, s.Stats())
		}
	}
	if st := s.Stats(); st.DroppedJump != 2 {
		t.Fatalf("jumps counted %d, want 2", st.DroppedJump)
	}
}

// Datagrams longer than the 1,500 bytes the firmware can receive are
// dropped and counted, whatever their header says.
func TestOverlongDatagramsDropped(t *testing.T) {
	s := start(t, Config{})
	ss, _ := s.NewSessionFrom(netip.MustParseAddr("127.0.0.1"))
	dev := device(t, s, ss)
	_ = dev.SendAudio(voice(1), 0)
	recvFrame(t, ss)
	for seq, total := range map[uint32]int{2: 1501, 3: 1616} {
		p := make([]byte, total-HeaderSize)
		if err := dev.SendRaw(Seal(nil, ss.block, Header{Type: PacketType, SSRC: ss.ID(), Sequence: seq}, p)); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "two long datagrams counted", func() bool { return s.Stats().DroppedLong == 2 })
	_ = dev.SendRaw(Seal(nil, ss.block, Header{Type: PacketType, SSRC: ss.ID(), Sequence: 4}, make([]byte, MaxPayload)))
	if f := recvFrame(t, ss); f.Sequence != 4 || len(f.Opus) != MaxPayload {
		t.Fatalf("next accepted frame: sequence %d, %d bytes", f.Sequence, len(f.Opus))
	}
}

// One MQTT address holds at most MaxSessionsPerAddr sessions: its next
// hello ends its own least valuable session (one that never received a
// datagram before one that did), never another address's.
func TestSessionsPerAddressQuota(t *testing.T) {
	s := New(nil, Config{MaxSessionsPerAddr: 3})
	a, b := netip.MustParseAddr("10.0.1.1"), netip.MustParseAddr("10.0.1.2")
	other, _ := s.NewSessionFrom(b)
	var mine []*Session
	for range 3 {
		ss, err := s.NewSessionFrom(a)
		if err != nil {
			t.Fatal(err)
		}
		mine = append(mine, ss)
	}
	// The first of a's sessions is in use; the other two never heard a datagram.
	s.receive(Seal(nil, mine[0].block, Header{Type: PacketType, SSRC: mine[0].ID(), Sequence: 1}, voice(1)), netip.AddrPortFrom(a, 9), s.now())
	if _, err := s.NewSessionFrom(a); err != nil {
		t.Fatal(err)
	}
	ended := 0
	for i, ss := range mine {
		select {
		case <-ss.Done():
			ended++
			if i == 0 {
				t.Fatal("the session in use was ended before an unused one")
			}
		default:
		}
	}
	if ended != 1 || s.Sessions() != 4 || s.Stats().Reclaimed != 1 {
		t.Fatalf("%d of the address's sessions ended, %d open", ended, s.Sessions())
	}
	select {
	case <-other.Done():
		t.Fatal("another address's session was ended")
	default:
	}
}

// With the table full of strangers' sessions, a device's hello still gets
// a working channel, and strangers' further hellos end their own sessions,
// not the device's.
func TestFullTableStillAdmitsADevice(t *testing.T) {
	s := start(t, Config{MaxSessions: 8, MaxSessionsPerAddr: 4})
	for i := range 8 {
		if _, err := s.NewSessionFrom(netip.AddrFrom4([4]byte{10, 9, 0, byte(i % 2)})); err != nil {
			t.Fatal(err)
		}
	}
	ss, err := s.NewSessionFrom(netip.MustParseAddr("127.0.0.1"))
	if err != nil {
		t.Fatalf("a device's hello with the table full of strangers: %v", err)
	}
	dev := device(t, s, ss)
	for i := range 50 { // strangers keep saying hello
		if _, err := s.NewSessionFrom(netip.AddrFrom4([4]byte{10, 9, 0, byte(i % 3)})); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-ss.Done():
		t.Fatal("strangers' hellos ended the device's session")
	default:
	}
	if err := dev.SendAudio(voice(1), 0); err != nil {
		t.Fatal(err)
	}
	if f := recvFrame(t, ss); !bytes.Equal(f.Opus, voice(1)) {
		t.Fatalf("uplink %q", f.Opus)
	}
	if err := ss.Send(voice(2), 0); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if f, err := dev.Recv(ctx); err != nil || !bytes.Equal(f.Opus, voice(2)) {
		t.Fatalf("downlink %v %v", f, err)
	}
	if n := s.Sessions(); n != 8 {
		t.Fatalf("%d sessions open, cap 8", n)
	}
}

// The Opus rules a datagram from a new address must pass.
func TestPlausibleOpus(t *testing.T) {
	for _, c := range []struct {
		p  []byte
		ok bool
	}{
		{nil, false},
		{[]byte{0x58}, true},                      // TOC only: DTX
		{voice(1), true},                          // SILK WB 60 ms
		{[]byte{0x5c, 1, 2}, false},               // stereo
		{[]byte{0x01, 1, 2}, true},                // code 1, two 1-byte frames
		{[]byte{0x01, 1, 2, 3}, false},            // code 1, odd
		{[]byte{0x02, 2, 1, 2, 3}, true},          // code 2, 2 + 1
		{[]byte{0x02, 9, 1}, false},               // code 2, first frame longer than the packet
		{[]byte{0x5b, 2, 1, 1}, true},             // code 3, 2 × 60 ms CBR
		{[]byte{0x5b, 3, 1, 1, 1}, false},         // code 3, 180 ms
		{[]byte{0x5b, 0}, false},                  // code 3, no frames
		{[]byte{0x5b, 0x42, 2, 1, 1, 0, 0}, true}, // code 3, padding 2
		{[]byte{0x5b, 0x82, 1, 1, 1}, true},       // code 3, VBR 1 + 1
		{[]byte{0x5b, 0x82, 5, 1, 1}, false},      // code 3, VBR first frame too long
	} {
		if got := plausibleOpus(c.p); got != c.ok {
			t.Errorf("plausibleOpus(% x) = %v", c.p, got)
		}
	}
}

// The devices of one IPv6 /64 share one quota, as one subscriber's
// network.
func TestIPv6PeersShareTheirSlash64Quota(t *testing.T) {
	s := New(nil, Config{MaxSessionsPerAddr: 2})
	for _, a := range []string{"2001:db8:1:1::1", "2001:db8:1:1::2", "2001:db8:1:1:ffff::3"} {
		if _, err := s.NewSessionFrom(netip.MustParseAddr(a)); err != nil {
			t.Fatal(err)
		}
	}
	other, _ := s.NewSessionFrom(netip.MustParseAddr("2001:db8:1:2::1"))
	if s.Sessions() != 3 || s.Stats().Reclaimed != 1 {
		t.Fatalf("%d sessions open, %d reclaimed; want one /64 capped at 2", s.Sessions(), s.Stats().Reclaimed)
	}
	select {
	case <-other.Done():
		t.Fatal("another /64's session was reclaimed")
	default:
	}
}
