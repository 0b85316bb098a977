// Package vad finds the end of an utterance in a device's microphone audio,
// for the auto and realtime listen modes, where the firmware leaves that
// to the server (../shared/docs/voice-and-mqtt.md §1.1, §4).
//
// Energy is a pure-Go detector: a frame is speech when its level stands
// far enough above a noise floor that follows the room, an utterance
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
	// speech, in dBFS (default -48).
	Above, Floor float64
	// Start is how much speech starts an utterance (default 120 ms); End
	// how much silence ends it (default 700 ms).
	StartMs, EndMs int
}

// Energy is an energy detector with an adaptive noise floor. Not safe for
// concurrent use: one per conversation.
type Energy struct {
	cfg      Config
	noise    float64 // dBFS
	calMs    int     // audio seen while calibrating the floor (the first 180 ms)
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
	if cfg.StartMs <= 0 {
		cfg.StartMs = 120
	}
	if cfg.EndMs <= 0 {
		cfg.EndMs = 700
	}
	v := &Energy{cfg: cfg}
	v.Reset()
	return v
}

// calibrateMs is how long the floor is learnt from the room before
// anything counts as speech: the quietest of the first frames.
const calibrateMs = 180

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
	if v.calMs < calibrateMs {
		if v.calMs == 0 || level < v.noise {
			v.noise = level
		}
		v.calMs += ms
		return false, false
	}
	loud := level > v.cfg.Floor && level > v.noise+v.cfg.Above
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
		if loud {
			v.speechMs += ms
		} else {
			v.speechMs = 0
		}
		if v.speechMs >= v.cfg.StartMs {
			v.in, v.quietMs = true, 0
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
