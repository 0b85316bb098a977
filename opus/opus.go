// Package opus is the hub's Opus codec, mono, at the rates and frame
// durations the device protocol uses. Decoding hostile input returns an
// error and never takes the process down.
//
// Two implementations, one API: by default the pure-Go
// github.com/thesyncim/gopus (gopus.go; interchangeable with libopus in
// both directions: libopus_test.go), so that the hub builds with Go
// alone; built with -tags libopus, the C libopus through cgo (libopus.go:
// it needs libopus's headers, Debian's libopus-dev), which encodes in
// about 40% of gopus's CPU and holds a tenth of its memory per coder
// (BENCHMARKS.md). Implementation names the one built in.
package opus

import (
	"errors"
	"fmt"
)

// ErrEmpty is returned for an empty packet (DTX sends none; a device
// should not send an empty frame).
var ErrEmpty = errors.New("opus: empty packet")

// Settings are the encoder's knobs an operator may turn (config's
// opus-complexity and opus-bitrate).
type Settings struct {
	Complexity int // 0–10: CPU spent per frame against quality
	Bitrate    int // the target in bits per second, 6000–510000; packets vary around it (VBR)
}

// Speech is the encoder's default: complexity 4 and 48 kbps.
//
// Complexity 4 leaves out the CELT pitch prefilter and the tonality
// analysis (complexity 7 and up); the bits it spends instead buy back
// more than the prefilter gave. On synthesised and recorded speech (24
// kHz, 60 ms frames, speech_test.go) it measures better than complexity
// 5 at 32 kbps, the default before it, in segmental SNR (0.4–1.8 dB) and
// log-spectral distance (0.2–0.5 dB lower), for 25–35% less CPU per
// frame with either codec: the encoding is most of what a spoken turn
// costs the hub. The price is bytes: about 320 per 60 ms of speech where
// 32 kbps sent 220, 48 kbps while the device is spoken to. Complexity 5
// at 32 kbps (opus-complexity, opus-bitrate) is the choice for a link
// where bytes cost more than the hub's CPU.
var Speech = Settings{Complexity: 4, Bitrate: 48000}

// Check lists what is wrong with s, each error starting with the
// setting's name ("complexity: 11 is outside 0..10").
func (s Settings) Check() []error {
	var errs []error
	if s.Complexity < 0 || s.Complexity > 10 {
		errs = append(errs, fmt.Errorf("complexity: %d is outside 0..10", s.Complexity))
	}
	if s.Bitrate < 6000 || s.Bitrate > 510000 {
		errs = append(errs, fmt.Errorf("bitrate: %d is outside 6000..510000", s.Bitrate))
	}
	return errs
}

// NewEncoder returns an encoder with the Speech settings at rate (8, 12,
// 16, 24 or 48 kHz) for frames of frameMs (10, 20, 40 or 60 ms).
func NewEncoder(rate, frameMs int) (*Encoder, error) { return Speech.NewEncoder(rate, frameMs) }

// checked is Check's errors as NewEncoder returns them.
func (s Settings) checked() error {
	if err := errors.Join(s.Check()...); err != nil {
		return fmt.Errorf("opus encoder: %w", err)
	}
	return nil
}

// FrameSamples is the number of samples Encode takes.
func (e *Encoder) FrameSamples() int { return e.frame }

// checkFrame is Encode's check of its input.
func (e *Encoder) checkFrame(pcm []int16) error {
	if len(pcm) != e.frame {
		return fmt.Errorf("opus: %d samples given, a frame is %d", len(pcm), e.frame)
	}
	return nil
}
