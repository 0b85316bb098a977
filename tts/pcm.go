package tts

import (
	"encoding/binary"
	"time"
)

// pcmJoin turns 16-bit little-endian PCM that arrives in pieces of any
// length (a sample may be split between two) into samples.
type pcmJoin struct {
	odd    byte // the first byte of a sample split across pieces
	hasOdd bool
	out    []int16 // what samples returned last (reused)
}

// samples returns the whole samples so far (nil when none), valid until
// the next call: its slice is reused.
func (p *pcmJoin) samples(data []byte) []int16 {
	if n := len(data)/2 + 1; cap(p.out) < n {
		p.out = make([]int16, 0, n) // once a stream, not doubling up to it
	}
	p.out = p.out[:0]
	if p.hasOdd && len(data) > 0 {
		p.out = append(p.out, int16(uint16(p.odd)|uint16(data[0])<<8))
		data, p.hasOdd = data[1:], false
	}
	for ; len(data) >= 2; data = data[2:] {
		p.out = append(p.out, int16(binary.LittleEndian.Uint16(data)))
	}
	if len(data) == 1 {
		p.odd, p.hasOdd = data[0], true
	}
	if len(p.out) == 0 {
		return nil
	}
	return p.out
}

// maxBytes is how many bytes of PCM at rate max allows (default 60 s):
// a server that never stops costs bounded time and memory.
func maxBytes(max time.Duration, rate int) int64 {
	if max <= 0 {
		max = 60 * time.Second
	}
	return int64(max.Seconds() * float64(rate) * 2)
}
