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
	buf     []int16 // output samples not yet framed
}

func newFramer(inRate int, down protocol.AudioParams) *framer {
	if inRate <= 0 {
		inRate = down.SampleRate
	}
	return &framer{in: inRate, out: down.SampleRate, size: down.SampleRate * down.FrameDuration / 1000}
}

// push adds a chunk and returns the complete frames. The frames share
// the framer's buffer without copying (a second of speech is 17 frames,
// 49 KB): f.buf only moves past them and appends after its end, so later
// pushes never write over a frame handed out.
func (f *framer) push(pcm []int16) [][]int16 {
	if f.in == f.out {
		f.buf = append(f.buf, pcm...)
	} else {
		f.resample(pcm)
	}
	if len(f.buf) < f.size {
		return nil
	}
	frames := make([][]int16, 0, len(f.buf)/f.size)
	for len(f.buf) >= f.size {
		frames = append(frames, f.buf[:f.size:f.size])
		f.buf = f.buf[f.size:]
	}
	return frames
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

// flush returns the last, partial frame padded with silence, or nil.
func (f *framer) flush() []int16 {
	if len(f.buf) == 0 {
		return nil
	}
	fr := make([]int16, f.size)
	copy(fr, f.buf)
	f.buf = f.buf[:0]
	return fr
}
