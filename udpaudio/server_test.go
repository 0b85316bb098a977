package udpaudio

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	hub "github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/sim/mqttdevice"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// start runs a server on loopback until the test ends.
func start(t *testing.T, cfg Config) *Server {
	t.Helper()
	s, err := Listen("127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := s.Run(ctx); err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	t.Cleanup(func() { cancel(); wg.Wait() })
	return s
}

// device opens a firmware-faithful audio channel to session ss.
func device(t *testing.T, s *Server, ss *Session) *mqttdevice.Channel {
	t.Helper()
	udp, _ := json.Marshal(ss.Hello("127.0.0.1", int(s.Addr().Port())))
	ch, err := mqttdevice.OpenChannel(udp)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ch.Close(false) })
	return ch
}

// waitFor polls cond with a generous deadline (no timing is asserted).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func recvFrame(t *testing.T, ss *Session) Frame {
	t.Helper()
	select {
	case f := <-ss.Frames():
		return f
	case <-time.After(10 * time.Second):
		t.Fatal("no uplink frame")
		return Frame{}
	}
}

// opus is a frame the hub accepts from a new address: a mono Opus TOC
// (SILK wideband 60 ms, one frame) and some bytes.
func opus(i int) []byte { return []byte(fmt.Sprintf("\x58opus frame %03d with some audio bytes", i)) }

func TestEchoBothWaysWithTheFirmwareRules(t *testing.T) {
	s := start(t, Config{})
	ss, err := s.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	dev := device(t, s, ss)

	if err := ss.Send(opus(0), 0); !errors.Is(err, ErrNoAddress) {
		t.Fatalf("Send before the device spoke = %v, want ErrNoAddress", err)
	}
	for i := 1; i <= 3; i++ {
		if err := dev.SendAudio(opus(i), uint32(i*60)); err != nil {
			t.Fatal(err)
		}
		f := recvFrame(t, ss)
		if !bytes.Equal(f.Opus, opus(i)) || f.Sequence != uint32(i) || f.Timestamp != uint32(i*60) {
			t.Fatalf("uplink frame %d = %q seq %d ts %d", i, f.Opus, f.Sequence, f.Timestamp)
		}
	}
	addr, ok := ss.Addr()
	if !ok || addr.String() != dev.LocalAddr().String() {
		t.Fatalf("learned address %v (%v), device is at %v", addr, ok, dev.LocalAddr())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i := 1; i <= 3; i++ {
		if err := ss.Send(opus(100+i), uint32(i)); err != nil {
			t.Fatal(err)
		}
		f, err := dev.Recv(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(f.Opus, opus(100+i)) || f.Sequence != uint32(i) {
			t.Fatalf("downlink frame %d decrypted by the device = %q seq %d", i, f.Opus, f.Sequence)
		}
	}
	if n := dev.Short.Load() + dev.BadType.Load() + dev.BadLength.Load() + dev.Old.Load(); n != 0 {
		t.Fatalf("the device rejected %d downlink datagrams", n)
	}
	if st := s.Stats(); st.Accepted != 3 || st.Sent != 3 {
		t.Fatalf("stats %+v", st)
	}
}

func TestDirectionsUseDifferentKeystreams(t *testing.T) {
	keys, err := NewKeys(7)
	if err != nil {
		t.Fatal(err)
	}
	zeros := make([]byte, 64)
	// Uplink as the device builds it: the nonce with length, timestamp, sequence.
	h := Header{Type: keys.Nonce[0], Flags: keys.Nonce[1], SSRC: keys.SSRC(), Sequence: 1}
	upPkt := Seal(nil, keys.block(), h, zeros)
	h.Flags = downlinkFlags
	downPkt := Seal(nil, keys.block(), h, zeros)
	if bytes.Equal(upPkt[HeaderSize:], downPkt[HeaderSize:]) {
		t.Fatal("uplink and downlink with the same sequence share a keystream")
	}
}

func TestReplayedAndOldSequencesDropped(t *testing.T) {
	s := start(t, Config{})
	ss, _ := s.NewSession()
	dev := device(t, s, ss)
	block := ss.keys.block()
	pkt := func(seq uint32, payload []byte) []byte {
		return Seal(nil, block, Header{Type: PacketType, SSRC: ss.ID(), Sequence: seq}, payload)
	}
	for _, seq := range []uint32{1, 5} {
		if err := dev.SendRaw(pkt(seq, opus(int(seq)))); err != nil {
			t.Fatal(err)
		}
		if f := recvFrame(t, ss); f.Sequence != seq {
			t.Fatalf("got sequence %d, want %d (gaps are accepted)", f.Sequence, seq)
		}
	}
	for _, seq := range []uint32{5, 3, 0} { // replayed, late, zero
		_ = dev.SendRaw(pkt(seq, opus(99)))
	}
	waitFor(t, "three old datagrams dropped", func() bool { return s.Stats().DroppedOld == 3 })
	_ = dev.SendRaw(pkt(6, opus(6)))
	if f := recvFrame(t, ss); f.Sequence != 6 {
		t.Fatalf("after the drops got sequence %d, want 6", f.Sequence)
	}
}

func TestMalformedDatagramsDroppedOthersUnaffected(t *testing.T) {
	s := start(t, Config{})
	ss, _ := s.NewSession()
	dev := device(t, s, ss)
	block := ss.keys.block()
	good := Seal(nil, block, Header{Type: PacketType, SSRC: ss.ID(), Sequence: 9}, opus(9))
	bad := [][]byte{
		good[:10],                               // shorter than a header
		append([]byte{0x02}, good[1:]...),       // wrong type
		good[:len(good)-1],                      // header length says one byte more
		append(append([]byte(nil), good...), 0), // one byte too many
	}
	for _, b := range bad {
		_ = dev.SendRaw(b)
	}
	waitFor(t, "malformed datagrams counted", func() bool { return s.Stats().DroppedShape == uint64(len(bad)) })

	other := make([]byte, len(good))
	copy(other, good)
	other[4] ^= 0xff // a connection id nobody has
	_ = dev.SendRaw(other)
	waitFor(t, "unknown session counted", func() bool { return s.Stats().DroppedUnknown == 1 })

	_ = dev.SendRaw(good)
	if f := recvFrame(t, ss); !bytes.Equal(f.Opus, opus(9)) {
		t.Fatalf("the session's own frame after the junk = %q", f.Opus)
	}
}

func TestDatagramFromAnotherAddressDropped(t *testing.T) {
	s := start(t, Config{})
	ss, _ := s.NewSession()
	dev := device(t, s, ss)
	if err := dev.SendAudio(opus(1), 0); err != nil {
		t.Fatal(err)
	}
	recvFrame(t, ss)
	intruder, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(s.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer intruder.Close()
	_, _ = intruder.Write(Seal(nil, ss.keys.block(), Header{Type: PacketType, SSRC: ss.ID(), Sequence: 50}, opus(50)))
	waitFor(t, "foreign address counted", func() bool { return s.Stats().DroppedAddr == 1 })
	_ = dev.SendAudio(opus(2), 0) // sequence 2: the intruder did not advance it
	if f := recvFrame(t, ss); f.Sequence != 2 {
		t.Fatalf("after the intruder got sequence %d", f.Sequence)
	}
}

func TestFloodFromOneAddressIsBounded(t *testing.T) {
	s := New(nil, Config{AddrRate: 50, MaxAddrs: 100})
	victim, _ := s.NewSession()
	victimAddr := netip.MustParseAddrPort("10.0.0.2:4000")
	now := time.Unix(1000, 0)
	junk := Seal(nil, victim.keys.block(), Header{Type: PacketType, SSRC: 12345}, opus(0))
	for range 1000 {
		s.receive(junk, netip.MustParseAddrPort("10.0.0.66:5000"), now)
	}
	st := s.Stats()
	if st.DroppedFlood != 950 || st.DroppedUnknown != 50 {
		t.Fatalf("after 1000 datagrams in one instant from one address: %+v, want 950 flood drops", st)
	}
	s.receive(Seal(nil, victim.keys.block(), Header{Type: PacketType, SSRC: victim.ID(), Sequence: 1}, opus(1)), victimAddr, now)
	if f := <-victim.Frames(); f.Sequence != 1 {
		t.Fatal("another address's session was affected by the flood")
	}
	// Spoofed sources cannot grow the table beyond MaxAddrs.
	for i := range 5000 {
		s.receive(junk, netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 1, byte(i >> 8), byte(i)}), 1), now)
	}
	if len(s.addrs) > 100 {
		t.Fatalf("rate-limit table grew to %d entries", len(s.addrs))
	}
	s.sweep(now.Add(10 * time.Second))
	if len(s.addrs) != 0 {
		t.Fatalf("%d idle rate-limit entries after the sweep", len(s.addrs))
	}
}

func TestIdleSessionEnds(t *testing.T) {
	s := New(nil, Config{IdleTimeout: time.Minute})
	t0 := time.Unix(1000, 0)
	s.now = func() time.Time { return t0 }
	idle, _ := s.NewSession()
	busy, _ := s.NewSession()
	s.receive(Seal(nil, busy.keys.block(), Header{Type: PacketType, SSRC: busy.ID(), Sequence: 1}, opus(1)), netip.MustParseAddrPort("10.0.0.3:1"), t0.Add(50*time.Second))
	s.sweep(t0.Add(61 * time.Second))
	select {
	case <-idle.Done():
	default:
		t.Fatal("a session silent for longer than IdleTimeout is still open")
	}
	if _, open := <-idle.Frames(); open {
		t.Fatal("frames channel of an ended session not closed")
	}
	select {
	case <-busy.Done():
		t.Fatal("a session active 11 s ago was ended")
	default:
	}
	if s.Sessions() != 1 {
		t.Fatalf("%d sessions open", s.Sessions())
	}
	s.receive(Seal(nil, idle.keys.block(), Header{Type: PacketType, SSRC: idle.ID(), Sequence: 1}, opus(1)), netip.MustParseAddrPort("10.0.0.4:1"), t0.Add(62*time.Second))
	if s.Stats().DroppedUnknown != 1 {
		t.Fatal("a datagram for an ended session was not dropped as unknown")
	}
}

func TestSessionAndQueueBounds(t *testing.T) {
	s := New(nil, Config{MaxSessions: 2, QueueLen: 2})
	a, _ := s.NewSession()
	b, _ := s.NewSession()
	now := time.Unix(1000, 0)
	from := netip.MustParseAddrPort("10.0.0.5:1")
	for seq := uint32(1); seq <= 3; seq++ {
		s.receive(Seal(nil, a.keys.block(), Header{Type: PacketType, SSRC: a.ID(), Sequence: seq}, opus(int(seq))), from, now)
	}
	if st := s.Stats(); st.Accepted != 2 || st.DroppedQueue != 1 {
		t.Fatalf("queue of 2, 3 frames unread: %+v", st)
	}
	// A third session with MaxSessions 2 takes the place of the one that
	// never received a datagram.
	if _, err := s.NewSession(); err != nil {
		t.Fatalf("third session with MaxSessions 2: %v", err)
	}
	select {
	case <-b.Done():
	default:
		t.Fatal("the unused session was not reclaimed")
	}
	select {
	case <-a.Done():
		t.Fatal("the session in use was reclaimed")
	default:
	}
	if err := a.Send(make([]byte, MaxPayload+1), 0); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Send of %d bytes = %v", MaxPayload+1, err)
	}
	a.Close()
	if err := a.Send(opus(1), 0); !errors.Is(err, ErrClosed) {
		t.Fatalf("Send after Close = %v", err)
	}
	if s.Sessions() != 1 || s.Stats().Reclaimed != 1 {
		t.Fatalf("%d sessions open, %d reclaimed", s.Sessions(), s.Stats().Reclaimed)
	}
}

func TestHelloObjectAsTheFirmwareParsesIt(t *testing.T) {
	keys, err := NewKeys(0xdeadbeef)
	if err != nil {
		t.Fatal(err)
	}
	h := keys.Hello("192.0.2.1", 8888)
	if len(h.Key) != 32 || len(h.Nonce) != 32 || h.Nonce[:2] != "01" || h.Nonce[8:16] != "deadbeef" {
		t.Fatalf("hello udp %+v", h)
	}
	b, _ := json.Marshal(h)
	if string(b[:11]) != `{"server":"` {
		t.Fatalf("member names: %s", b)
	}
	k2, _ := NewKeys(0xdeadbeef)
	if k2.Key == keys.Key {
		t.Fatal("two sessions got the same key")
	}
}

// TestDeviceDropsWhatTheFirmwareDrops sends downlink datagrams the
// firmware rejects from the server's own socket: a replayed one, one with
// a wrong length and one with a wrong type. The device decrypts none of
// them and keeps accepting Send's next frame.
func TestDeviceDropsWhatTheFirmwareDrops(t *testing.T) {
	s := start(t, Config{})
	ss, _ := s.NewSession()
	dev := device(t, s, ss)
	_ = dev.SendAudio(opus(1), 0)
	recvFrame(t, ss)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := ss.Send(opus(2), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := dev.Recv(ctx); err != nil {
		t.Fatal(err)
	}
	addr, _ := ss.Addr()
	replay := append([]byte(nil), ss.sendBuf...) // the datagram just sent, sequence 1
	short := replay[:len(replay)-1]
	typed := append([]byte{0x02}, replay[1:]...)
	for _, b := range [][]byte{replay, short, typed} {
		if _, err := s.conn.WriteToUDPAddrPort(b, addr); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "the device to drop three datagrams", func() bool {
		return dev.Old.Load() == 1 && dev.BadLength.Load() == 1 && dev.BadType.Load() == 1
	})
	if err := ss.Send(opus(3), 0); err != nil {
		t.Fatal(err)
	}
	if f, err := dev.Recv(ctx); err != nil || !bytes.Equal(f.Opus, opus(3)) || f.Sequence != 2 {
		t.Fatalf("next frame %q seq %d: %v", f.Opus, f.Sequence, err)
	}
}

func TestListenAddresses(t *testing.T) {
	s, err := Listen(":0", Config{})
	if err != nil {
		t.Fatalf("Listen(\":0\"): %v", err)
	}
	if s.Addr().Port() == 0 {
		t.Fatal("no port picked")
	}
	s.conn.Close()
	if _, err := Listen("no port", Config{}); hub.ErrorCode(err) != hub.EINVALID {
		t.Fatalf("Listen without a port: %v", err)
	}
}
