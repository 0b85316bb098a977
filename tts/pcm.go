package tts

import (
	"encoding/binary"
	"time"
)

// pcmJoin turns 16-bit little-endian PCM that arrives in pieces of any
// length (a sample may be split between two) into samples.
type pcmJoin struct {
	odd []byte // the first byte of a sample split across pieces
}

// samples returns the whole samples so far (nil when none).
func (p *pcmJoin) samples(data []byte) []int16 {
	b := data
	if p.odd != nil {
		b = append(p.odd, data...)
		p.odd = nil
	}
	if len(b)%2 == 1 {
		p.odd = []byte{b[len(b)-1]}
		b = b[:len(b)-1]
	}
	if len(b) == 0 {
		return nil
	}
	pcm := make([]int16, len(b)/2)
	for i := range pcm {
		pcm[i] = int16(binary.LittleEndian.Uint16(b[2*i:]))
	}
	return pcm
}

// maxBytes is how many bytes of PCM at rate max allows (default 60 s):
// a server that never stops costs bounded time and memory.
func maxBytes(max time.Duration, rate int) int64 {
	if max <= 0 {
		max = 60 * time.Second
	}
	return int64(max.Seconds() * float64(rate) * 2)
}
