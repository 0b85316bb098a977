package ogg_test

import (
	"bytes"
	"testing"

	"github.com/xiaozhi-hub/hub/ogg"
)

// A packet's duration comes from its TOC byte and frame count (RFC 6716
// §3.1–3.2), and a packet breaking the framing rules of §3.4 is refused.
func TestOpusSamples(t *testing.T) {
	for _, c := range []struct {
		name string
		p    []byte
		want int // 48 kHz samples; -1: invalid
	}{
		{"R1: empty", nil, -1},
		{"code 0, SILK 60 ms", append([]byte{11 << 3}, make([]byte, 80)...), 2880},
		{"code 0, a DTX frame (TOC only)", []byte{11 << 3}, 2880},
		{"code 0, CELT 2.5 ms", []byte{16 << 3, 1}, 120},
		{"code 0, hybrid 20 ms", []byte{13 << 3, 1}, 960},
		{"R2: code 0, a frame of 1276 bytes", append([]byte{11 << 3}, make([]byte, 1276)...), -1},
		{"code 1, two frames of 20 ms", append([]byte{1<<3 | 1}, make([]byte, 10)...), 1920},
		{"R3: code 1, odd length", append([]byte{1<<3 | 1}, make([]byte, 11)...), -1},
		{"R3: code 1, frames of 1276 bytes", append([]byte{1<<3 | 1}, make([]byte, 2552)...), -1},
		{"code 2, first frame 3 of 5 bytes", []byte{1<<3 | 2, 3, 1, 2, 3, 4, 5}, 1920},
		{"R4: code 2, first frame longer than the packet", []byte{1<<3 | 2, 9, 1, 2}, -1},
		{"R4: code 2, a length byte missing", []byte{1<<3 | 2, 252}, -1},
		{"R4: code 2, no length", []byte{1<<3 | 2}, -1},
		{"R6: code 3, no frame count", []byte{1<<3 | 3}, -1},
		{"R5: code 3, no frames", []byte{1<<3 | 3, 0}, -1},
		{"code 3, 48 frames of 2.5 ms (120 ms)", append([]byte{16<<3 | 3, 48}, make([]byte, 48)...), 5760},
		{"R5: code 3, 49 frames of 2.5 ms", append([]byte{16<<3 | 3, 49}, make([]byte, 49)...), -1},
		{"R5: code 3, three frames of 60 ms (180 ms)", append([]byte{3<<3 | 3, 3}, make([]byte, 3)...), -1},
		{"code 3, two 60 ms CBR frames", append([]byte{3<<3 | 3, 2}, make([]byte, 4)...), 5760},
		{"R6: code 3 CBR, not a multiple of the count", append([]byte{3<<3 | 3, 2}, make([]byte, 5)...), -1},
		{"code 3 padded", append([]byte{1<<3 | 3, 0x41, 3}, make([]byte, 4+3)...), 960},
		{"R6: code 3, padding longer than the packet", append([]byte{1<<3 | 3, 0x41, 9}, make([]byte, 4)...), -1},
		{"R6: code 3, padding length missing", []byte{1<<3 | 3, 0x41}, -1},
		{"R6: code 3, padding length 255 then nothing", []byte{1<<3 | 3, 0x41, 255}, -1},
		{"code 3 VBR, frames of 2 and 3 bytes", []byte{1<<3 | 3, 0x82, 2, 1, 1, 2, 2, 2}, 1920},
		{"R7: code 3 VBR, lengths over the packet", []byte{1<<3 | 3, 0x82, 9, 1, 1}, -1},
		{"R7: code 3 VBR, a length missing", []byte{1<<3 | 3, 0x83, 1}, -1},
		{"R7: code 3 VBR, the last frame over 1275 bytes", append([]byte{1<<3 | 3, 0x82, 0}, make([]byte, 1276)...), -1},
	} {
		n, err := ogg.OpusSamples(c.p)
		if c.want < 0 {
			if err == nil {
				t.Errorf("%s: taken as %d samples", c.name, n)
			}
			continue
		}
		if err != nil || n != c.want {
			t.Errorf("%s: %d samples (%v), want %d", c.name, n, err, c.want)
		}
	}
}

// Checking a packet allocates nothing: it runs on every packet heard.
func TestOpusSamplesAllocates(t *testing.T) {
	p := append([]byte{1<<3 | 3, 0xc2, 2, 3}, bytes.Repeat([]byte{1}, 9)...)
	if n := testing.AllocsPerRun(100, func() { _, _ = ogg.OpusSamples(p) }); n != 0 {
		t.Fatalf("%v allocations per packet", n)
	}
}
