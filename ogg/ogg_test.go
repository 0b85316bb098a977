package ogg_test

import (
	"bytes"
	"encoding/binary"
	"math"
	"slices"
	"testing"

	"github.com/xiaozhi-hub/hub/ogg"
	"github.com/xiaozhi-hub/hub/opus"
)

// page is one Ogg page as the test's own reader sees it.
type page struct {
	flags   byte
	granule int64
	seq     uint32
	lacing  []byte
	data    []byte
}

// oggCRC is Ogg's CRC-32 computed bit by bit from its definition (RFC 3533
// §6: polynomial 0x04c11db7, MSB first, initial 0, no final xor), apart
// from the package's table.
func oggCRC(b []byte) uint32 {
	var crc uint32
	for _, x := range b {
		crc ^= uint32(x) << 24
		for range 8 {
			if crc&(1<<31) != 0 {
				crc = crc<<1 ^ 0x04c11db7
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

// pages splits a stream into its pages, checking each page's CRC.
func pages(t *testing.T, b []byte) []page {
	t.Helper()
	var out []page
	for len(b) > 0 {
		if len(b) < 27 || string(b[:4]) != "OggS" {
			t.Fatalf("page %d: no capture pattern", len(out))
		}
		n := int(b[26])
		size := 27 + n
		for _, l := range b[27 : 27+n] {
			size += int(l)
		}
		p := bytes.Clone(b[:size])
		binary.LittleEndian.PutUint32(p[22:], 0)
		if got, want := binary.LittleEndian.Uint32(b[22:]), oggCRC(p); got != want {
			t.Fatalf("page %d: CRC %08x, want %08x", len(out), got, want)
		}
		out = append(out, page{flags: b[5], granule: int64(binary.LittleEndian.Uint64(b[6:])),
			seq: binary.LittleEndian.Uint32(b[18:]), lacing: b[27 : 27+n], data: b[27+n : size]})
		b = b[size:]
	}
	return out
}

// silk60 is a 60 ms SILK wideband packet (TOC config 11, code 0) of n bytes.
func silk60(n int, fill byte) []byte {
	p := bytes.Repeat([]byte{fill}, n)
	p[0] = 11 << 3
	return p
}

// The stream is what RFC 7845 asks: OpusHead (one channel, pre-skip 0,
// input rate 16000, mapping family 0) alone on the first page flagged
// beginning of stream, OpusTags on the second, then the packets, each
// page's granule position the 48 kHz samples of the packets ended on it
// and before, the last page flagged end of stream; and what the writer
// was given before the stream stays in front of it.
func TestWriterPages(t *testing.T) {
	w := ogg.NewWriter([]byte("form"), 7, 16000)
	var sent [][]byte
	for i := range 20 {
		p := silk60(60+i, byte(i))
		sent = append(sent, p)
		if err := w.WritePacket(p); err != nil {
			t.Fatal(err)
		}
	}
	b := w.Close()
	if string(b[:4]) != "form" {
		t.Fatalf("the stream does not follow what was in the slice: %q", b[:8])
	}
	ps := pages(t, b[4:])
	if len(ps) != 3 {
		t.Fatalf("%d pages, want OpusHead, OpusTags and one of audio", len(ps))
	}
	head := ps[0].data
	if ps[0].flags != 0x02 || string(head[:8]) != "OpusHead" || head[8] != 1 || head[9] != 1 ||
		binary.LittleEndian.Uint16(head[10:]) != 0 || binary.LittleEndian.Uint32(head[12:]) != 16000 || head[18] != 0 {
		t.Fatalf("first page: flags %x, % x", ps[0].flags, head)
	}
	if ps[1].flags != 0 || string(ps[1].data[:8]) != "OpusTags" || ps[0].granule != 0 || ps[1].granule != 0 {
		t.Fatalf("second page: flags %x, granule %d, %q", ps[1].flags, ps[1].granule, ps[1].data)
	}
	if ps[2].flags != 0x04 || ps[2].granule != 20*2880 || len(ps[2].lacing) != 20 {
		t.Fatalf("audio page: flags %x, granule %d, %d segments", ps[2].flags, ps[2].granule, len(ps[2].lacing))
	}
	if !bytes.Equal(ps[2].data, bytes.Join(sent, nil)) {
		t.Fatal("the audio page does not hold the packets as sent")
	}
	for i, p := range ps {
		if p.seq != uint32(i) {
			t.Fatalf("page %d has sequence number %d", i, p.seq)
		}
	}
	s, err := ogg.Read(b[4:])
	if err != nil {
		t.Fatal(err)
	}
	if s.Channels != 1 || s.InputRate != 16000 || len(s.Packets) != 20 || s.Samples != 20*2880 {
		t.Fatalf("read %+v", s)
	}
}

// A page holds at most 255 segments: a packet that does not fit goes on
// on the next page, flagged continued; a page on which no packet ends has
// granule position -1; a packet of a multiple of 255 bytes ends with an
// empty segment.
func TestWriterSegmentBoundary(t *testing.T) {
	w := ogg.NewWriter(nil, 1, 16000)
	// 1275 bytes: five full segments and an empty one; 42 of them are 252
	// segments, and the 43rd is split 3 + 3 across two pages.
	for i := range 43 {
		if err := w.WritePacket(silk60(1275, byte(i))); err != nil {
			t.Fatal(err)
		}
	}
	// A padded packet of 269 segments: it fills the rest of the second
	// audio page and ends on a third.
	big := make([]byte, 0, 68444)
	big = append(big, 31<<3|3, 0x41) // CELT 20 ms, code 3, padding, one frame
	big = append(big, bytes.Repeat([]byte{255}, 268)...)
	big = append(big, 0)                          // 268×254 = 68072 bytes of padding
	big = append(big, make([]byte, 100+68072)...) // the frame, then the padding
	if err := w.WritePacket(big); err != nil {
		t.Fatal(err)
	}
	b := w.Close()
	ps := pages(t, b)
	audio := ps[2:]
	if len(audio) != 3 {
		t.Fatalf("%d audio pages, want 3", len(audio))
	}
	if n := len(audio[0].lacing); n != 255 || audio[0].granule != 42*2880 || audio[0].flags != 0 {
		t.Fatalf("first audio page: %d segments, granule %d, flags %x", n, audio[0].granule, audio[0].flags)
	}
	if audio[1].flags != 0x01 || len(audio[1].lacing) != 255 || audio[1].granule != 43*2880 {
		t.Fatalf("second audio page: flags %x, %d segments, granule %d", audio[1].flags, len(audio[1].lacing), audio[1].granule)
	}
	if !bytes.Equal(audio[1].lacing[:3], []byte{255, 255, 0}) {
		t.Fatalf("the split packet's last segments: %v", audio[1].lacing[:3])
	}
	if audio[2].flags != 0x05 || audio[2].granule != 43*2880+960 {
		t.Fatalf("last page: flags %x, granule %d", audio[2].flags, audio[2].granule)
	}
	// A page on which no packet ends: the big packet alone on a page.
	w = ogg.NewWriter(nil, 1, 16000)
	_ = w.WritePacket(big)
	ps = pages(t, w.Close())
	if len(ps) != 4 || ps[2].granule != -1 || ps[2].flags != 0 || ps[3].flags != 0x05 || ps[3].granule != 960 {
		t.Fatalf("a packet over two pages: %d pages, first granule %d", len(ps), ps[2].granule)
	}
	if s, err := ogg.Read(b); err != nil || len(s.Packets) != 44 || !bytes.Equal(s.Packets[43], big) {
		t.Fatalf("read: %v", err)
	}
}

// Read refuses a stream whose checksum is wrong.
func TestReadChecksum(t *testing.T) {
	w := ogg.NewWriter(nil, 1, 16000)
	_ = w.WritePacket(silk60(80, 1))
	b := w.Close()
	b[len(b)-1] ^= 1
	if _, err := ogg.Read(b); err == nil {
		t.Fatal("a damaged page was read")
	}
}

// What the writer makes decodes back to the audio the packets carry.
func TestOpusRoundTrip(t *testing.T) {
	enc, err := opus.NewEncoder(16000, 60)
	if err != nil {
		t.Fatal(err)
	}
	w := ogg.NewWriter(nil, 1, 16000)
	var sent [][]byte
	pcm := make([]int16, 960)
	for f := range 10 {
		for i := range pcm {
			pcm[i] = int16(8000 * math.Sin(float64(f*960+i)*2*math.Pi*440/16000))
		}
		p, err := enc.Encode(pcm)
		if err != nil {
			t.Fatal(err)
		}
		p = bytes.Clone(p)
		sent = append(sent, p)
		if err := w.WritePacket(p); err != nil {
			t.Fatal(err)
		}
	}
	s, err := ogg.Read(w.Close())
	if err != nil {
		t.Fatal(err)
	}
	if s.Samples != 10*2880 {
		t.Fatalf("%d samples, want %d (ten 60 ms packets)", s.Samples, 10*2880)
	}
	a, _ := opus.NewDecoder(16000)
	b, _ := opus.NewDecoder(16000)
	for i, p := range s.Packets {
		x, err1 := a.Decode(p)
		y, err2 := b.Decode(sent[i])
		if err1 != nil || err2 != nil || len(x) != 960 || !slices.Equal(x, y) {
			t.Fatalf("packet %d decodes to %d samples (%v), not what was sent", i, len(x), err1)
		}
	}
}
