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

// Speech is the encoder's default: complexity 5 and 32 kbps.
//
// Complexity 5 keeps the CELT pitch prefilter (voiced speech loses 1.5
// dB of segmental SNR without it, at complexity 4) and leaves out the
// tonality analysis (complexity 7 and up): within 0.5 dB segmental SNR
// and 0.1 dB log-spectral distance of complexity 10 (speech_test.go), for
// about 20% less CPU per frame. 32 kbps is a rate for speech, not music:
// packets half the size of the encoder's automatic 64 kbps for 24 kHz
// mono.
var Speech = Settings{Complexity: 5, Bitrate: 32000}

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
