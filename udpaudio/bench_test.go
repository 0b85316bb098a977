package udpaudio

import (
	"net/netip"
	"testing"
	"time"
)

// A 60 ms Opus frame at the firmware's 16 kHz mono is typically 100–200 bytes.
const benchFrame = 200

func BenchmarkSeal(b *testing.B) {
	keys, _ := NewKeys(1)
	block := keys.block()
	payload := make([]byte, benchFrame)
	buf := make([]byte, 0, HeaderSize+benchFrame)
	b.SetBytes(benchFrame)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		buf = Seal(buf[:0], block, Header{Type: PacketType, SSRC: 1, Sequence: uint32(i)}, payload)
	}
}

func BenchmarkOpen(b *testing.B) {
	keys, _ := NewKeys(1)
	block := keys.block()
	pkt := Seal(nil, block, Header{Type: PacketType, SSRC: 1, Sequence: 1}, make([]byte, benchFrame))
	out := make([]byte, 0, benchFrame)
	b.SetBytes(benchFrame)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseHeader(pkt); err != nil {
			b.Fatal(err)
		}
		out = Open(out[:0], block, pkt)
	}
}

// BenchmarkReceive is the server's whole uplink path for one datagram:
// rate limit, header rules, session lookup, sequence rule, decryption and
// queueing (the socket read itself excluded).
func BenchmarkReceive(b *testing.B) {
	s := New(nil, Config{QueueLen: 1, AddrRate: 1 << 30, SessionRate: 1 << 30})
	ss, _ := s.NewSession()
	from := netip.MustParseAddrPort("10.0.0.1:5000")
	now := time.Unix(1000, 0)
	pkts := make([][]byte, 1024)
	b.SetBytes(benchFrame)
	b.ReportAllocs()
	var seq uint32
	for b.Loop() {
		if seq%1024 == 0 {
			b.StopTimer()
			for j := range pkts {
				pkts[j] = Seal(pkts[j][:0], ss.block, Header{Type: PacketType, SSRC: ss.ID(), Sequence: seq + uint32(j) + 1}, make([]byte, benchFrame))
			}
			b.StartTimer()
		}
		s.receive(pkts[seq%1024], from, now)
		seq++
		<-ss.frames
	}
}

// BenchmarkNewSessionWhenFull is a hello with the table full (4096
// sessions from 137 addresses, as in the attack): the scan for the
// session that makes room.
func BenchmarkNewSessionWhenFull(b *testing.B) {
	s := New(nil, Config{MaxSessionsPerAddr: 4096})
	addr := func(i int) netip.Addr { return netip.AddrFrom4([4]byte{10, 2, byte(i % 137), 1}) }
	for i := range 4096 {
		if _, err := s.NewSessionFrom(addr(i)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := s.NewSessionFrom(addr(i)); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
