// Package vad finds the end of an utterance in a device's microphone audio,
// for the auto and realtime listen modes, where the firmware leaves that
// to the server (docs/protocol.md §6).
//
// Energy is a pure-Go detector: a frame is speech when its level stands
// far enough above a noise floor that follows the room (learnt without
// assuming that listening starts in silence), an utterance
// starts after a little speech (a click is not one) and ends after enough
// silence (a pause between words is not the end). It needs no model and
// no set-up; a neural detector (Silero) would reject loud non-speech
// better, and can take its place behind the same two methods.
package vad

import "math"

// Config tunes Energy. Zero fields take the defaults.
type Config struct {
	Rate int // sample rate (default 16000)
	// Above is how far above the noise floor a frame must be to count as
	// speech, in dB (default 12); Floor the lowest level ever counted as
	// speech, in dBFS (default -48); Moving how much the level of speech
	// heard before the room is known must rise and fall, in dB (default 6).
	Above, Floor, Moving float64
	// Start is how much speech starts an utterance (default 120 ms); End
	// how much silence ends it (default 700 ms).
	StartMs, EndMs int
}

// Energy is an energy detector with an adaptive noise floor. Not safe for
// concurrent use: one per conversation (the floor it learns is kept from
// one utterance to the next: same room).
//
// It does not assume that listening starts in silence: a person often
// goes on talking right after the wake word, and the firmware sends the
// wake word's own audio first. The floor starts low (startFloor, below
// any speech) and moves down quickly and up slowly, so speech from the
// first frame is speech. Until the detector has heard a frame quieter than
// speech, it does not know the room, so an utterance must also sound like
// speech: loud frames whose level moves by syllables (at least Moving dB
// within the run). A run of loud frames whose level stays put for
// steadyMs is the room (a fan, a hum): the floor jumps to it.
type Energy struct {
	cfg      Config
	noise    float64 // dBFS
	known    bool    // a frame quieter than speech was heard: the floor is the room's
	lo, hi   float64 // the quietest and loudest frame of the loud run, while !known
	speechMs int     // consecutive speech, before the utterance started
	quietMs  int     // consecutive silence, during the utterance
	in       bool    // an utterance is going on
}

// NewEnergy returns a detector.
func NewEnergy(cfg Config) *Energy {
	if cfg.Rate <= 0 {
		cfg.Rate = 16000
	}
	if cfg.Above == 0 {
		cfg.Above = 12
	}
	if cfg.Floor == 0 {
		cfg.Floor = -48
	}
	if cfg.Moving == 0 {
		cfg.Moving = 6
	}
	if cfg.StartMs <= 0 {
		cfg.StartMs = 120
	}
	if cfg.EndMs <= 0 {
		cfg.EndMs = 700
	}
	v := &Energy{cfg: cfg, noise: startFloor}
	v.Reset()
	return v
}

const (
	// startFloor is the noise floor before the room is heard: a quiet
	// room, below the lowest speech level (Config.Floor), so that the
	// first frames count as speech when they are loud.
	startFloor = -60
	// unknownStartMs is how much speech starts an utterance while the room
	// is not known: long enough to see the level move, and no longer than
	// the audio the conversation keeps from before speech began (300 ms).
	unknownStartMs = 300
	// steadyMs of loud frames whose level does not move is the room.
	steadyMs = 600
)

// Reset forgets the utterance (the noise floor is kept: same room).
func (v *Energy) Reset() {
	v.speechMs, v.quietMs, v.in = 0, 0, false
}

// Push takes the next frame. It reports whether an utterance is going on,
// and whether one just ended with this frame.
func (v *Energy) Push(pcm []int16) (speaking, ended bool) {
	if len(pcm) == 0 {
		return v.in, false
	}
	ms := len(pcm) * 1000 / v.cfg.Rate
	level := dBFS(pcm)
	loud := level > v.cfg.Floor && level > v.noise+v.cfg.Above
	if !loud {
		v.known = true
	}
	// The floor follows the room: quickly down, slowly up, and very
	// slowly up even through loud frames, so that a noise that starts and
	// stays (a fan) stops counting as speech after a few seconds.
	switch {
	case level < v.noise:
		v.noise += (level - v.noise) * 0.5
	case !loud:
		v.noise += (level - v.noise) * 0.05
	default:
		v.noise += (level - v.noise) * 0.01
	}
	if !v.in {
		if !loud {
			v.speechMs = 0
			return false, false
		}
		if v.speechMs == 0 {
			v.lo, v.hi = level, level
		}
		v.lo, v.hi = min(v.lo, level), max(v.hi, level)
		v.speechMs += ms
		switch {
		case v.known:
			v.in = v.speechMs >= v.cfg.StartMs
		case v.hi-v.lo >= v.cfg.Moving:
			v.in = v.speechMs >= max(v.cfg.StartMs, unknownStartMs)
		case v.speechMs >= steadyMs: // steady: the room, not a voice
			v.noise, v.known, v.speechMs = v.lo, true, 0
		}
		if v.in {
			v.quietMs = 0
		}
		return v.in, false
	}
	if loud {
		v.quietMs = 0
		return true, false
	}
	v.quietMs += ms
	if v.quietMs >= v.cfg.EndMs {
		v.in, v.speechMs = false, 0
		return false, true
	}
	return true, false
}

// dBFS is the frame's RMS level relative to full scale.
func dBFS(pcm []int16) float64 {
	var sum float64
	for _, s := range pcm {
		f := float64(s)
		sum += f * f
	}
	rms := math.Sqrt(sum / float64(len(pcm)))
	if rms < 1 {
		return -96
	}
	return 20 * math.Log10(rms/32768)
}
