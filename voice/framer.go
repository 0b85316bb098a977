package voice

import "github.com/xiaozhi-hub/hub/protocol"

// framer turns synthesised PCM at any rate into frames of the downlink
// (the rate and duration the server hello announced), resampling linearly:
// speech synthesis already band-limits its output, and the common case
// (24 kHz in, 24 kHz out) is a copy.
type framer struct {
	in, out int     // sample rates
	size    int     // samples per downlink frame
	pos     float64 // position of the next output sample in input samples, relative to prev
	prev    int16   // the last input sample of the previous chunk
	started bool
	buf     []int16   // output samples; those from off on are not yet framed
	off     int       // where the samples not yet framed start
	frames  [][]int16 // what push returned last (reused)
}

func newFramer(inRate int, down protocol.AudioParams) *framer {
	if inRate <= 0 {
		inRate = down.SampleRate
	}
	size := down.SampleRate * down.FrameDuration / 1000
	// Room for a frame's leftover and a chunk of speech as providers send
	// it (4,096 samples over HTTP), so that push does not grow it by steps.
	return &framer{in: inRate, out: down.SampleRate, size: size, buf: make([]int16, 0, size+4096)}
}

// push adds a chunk and returns the complete frames, which are valid
// until the next push: they share the framer's buffer, which the next
// push reuses (a turn encodes each frame before it pushes more). A
// framer's buffer grows to a chunk and a frame, not to the answer.
func (f *framer) push(pcm []int16) [][]int16 {
	f.buf = append(f.buf[:0], f.buf[f.off:]...) // the samples not framed yet to the front
	f.off = 0
	if f.in == f.out {
		f.buf = append(f.buf, pcm...)
	} else {
		f.resample(pcm)
	}
	f.frames = f.frames[:0]
	for len(f.buf)-f.off >= f.size {
		f.frames = append(f.frames, f.buf[f.off:f.off+f.size:f.off+f.size])
		f.off += f.size
	}
	if len(f.frames) == 0 {
		return nil
	}
	return f.frames
}

// resample appends pcm, converted from f.in to f.out, to f.buf. Sample i
// of pcm is at position i+1 (position 0 is prev, the last sample before).
func (f *framer) resample(pcm []int16) {
	if len(pcm) == 0 {
		return
	}
	if !f.started {
		f.prev, f.started, f.pos = pcm[0], true, 1
	}
	step := float64(f.in) / float64(f.out)
	n := float64(len(pcm))
	for ; f.pos <= n; f.pos += step {
		i := int(f.pos)
		frac := f.pos - float64(i)
		a := f.prev
		if i > 0 {
			a = pcm[i-1]
		}
		b := a
		if i < len(pcm) {
			b = pcm[i]
		}
		f.buf = append(f.buf, int16(float64(a)+(float64(b)-float64(a))*frac))
	}
	f.pos -= n
	f.prev = pcm[len(pcm)-1]
}

// flush returns the last, partial frame padded with silence, or nil; it
// shares the framer's buffer, as push's frames do.
func (f *framer) flush() []int16 {
	if len(f.buf) == f.off {
		return nil
	}
	fr := append(f.buf[:0], f.buf[f.off:]...) // to the front, then padded
	fr = append(fr, make([]int16, f.size-len(fr))...)
	f.buf, f.off = fr[:0], 0
	return fr
}
