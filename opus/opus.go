// Package opus is the hub's Opus codec: the pure-Go github.com/thesyncim/gopus
// (interchangeable with libopus in both directions: libopus_test.go, run
// with -tags libopus), mono, at the rates and frame
// durations the device protocol uses. Decoding hostile input returns an
// error and never takes the process down.
package opus

import (
	"errors"
	"fmt"

	"github.com/thesyncim/gopus"
)

// Decoder decodes one device's uplink packets to 16-bit mono PCM.
type Decoder struct {
	d     *gopus.Decoder
	buf   []int16
	shelf *shelf[*Decoder] // made by Codec: Release puts it back
}

// NewDecoder returns a decoder to rate (8, 12, 16, 24 or 48 kHz).
func NewDecoder(rate int) (*Decoder, error) {
	d, err := gopus.NewDecoder(gopus.DefaultDecoderConfig(rate, 1))
	if err != nil {
		return nil, fmt.Errorf("opus decoder at %d Hz: %w", rate, err)
	}
	return &Decoder{d: d, buf: make([]int16, rate*120/1000)}, nil // the longest Opus packet is 120 ms
}

// ErrEmpty is returned for an empty packet (DTX sends none; a device
// should not send an empty frame).
var ErrEmpty = errors.New("opus: empty packet")

// Decode decodes one packet into a new slice of PCM.
func (d *Decoder) Decode(packet []byte) (pcm []int16, err error) {
	if len(packet) == 0 {
		return nil, ErrEmpty
	}
	defer func() {
		if r := recover(); r != nil { // a codec bug must not crash the hub on a device's packet
			pcm, err = nil, fmt.Errorf("opus: cannot decode packet: %v", r)
		}
	}()
	n, err := d.d.DecodeInt16(packet, d.buf)
	if err != nil {
		return nil, fmt.Errorf("opus: %w", err)
	}
	return append([]int16(nil), d.buf[:n]...), nil
}

// Encoder encodes 16-bit mono PCM into packets of one frame each.
type Encoder struct {
	e     *gopus.Encoder
	frame int // samples per packet
	buf   []byte
	shelf *shelf[*Encoder] // made by Codec: Release puts it back
}

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

// NewEncoder returns an encoder with s at rate for frames of frameMs. It
// codes CELT only, as the encoder chose on its own at 64 kbps: its SILK
// and hybrid modes, which a voice hint at 32 kbps selects, cost 1.5–2.3
// times the CPU in gopus.
func (s Settings) NewEncoder(rate, frameMs int) (*Encoder, error) {
	if err := errors.Join(s.Check()...); err != nil {
		return nil, fmt.Errorf("opus encoder: %w", err)
	}
	e, err := gopus.NewEncoder(gopus.EncoderConfig{SampleRate: rate, Channels: 1, Application: gopus.ApplicationAudio})
	if err != nil {
		return nil, fmt.Errorf("opus encoder at %d Hz: %w", rate, err)
	}
	frame := rate * frameMs / 1000
	if err := e.SetFrameSize(frame); err != nil {
		return nil, fmt.Errorf("opus encoder: %d ms frames: %w", frameMs, err)
	}
	if err := errors.Join(e.SetMode(gopus.EncoderModeCELT), e.SetComplexity(s.Complexity), e.SetBitrate(s.Bitrate)); err != nil {
		return nil, fmt.Errorf("opus encoder: %w", err)
	}
	return &Encoder{e: e, frame: frame, buf: make([]byte, 4000)}, nil
}

// FrameSamples is the number of samples Encode takes.
func (e *Encoder) FrameSamples() int { return e.frame }

// Encode encodes exactly one frame into a new packet.
func (e *Encoder) Encode(pcm []int16) ([]byte, error) {
	if len(pcm) != e.frame {
		return nil, fmt.Errorf("opus: %d samples given, a frame is %d", len(pcm), e.frame)
	}
	n, err := e.e.EncodeInt16(pcm, e.buf)
	if err != nil {
		return nil, fmt.Errorf("opus: %w", err)
	}
	return append([]byte(nil), e.buf[:n]...), nil
}
