//go:build !libopus

package opus

import (
	"errors"
	"fmt"
	"reflect"
	"unsafe"

	"github.com/thesyncim/gopus"
)

// Implementation is the Opus implementation built in.
const Implementation = "gopus"

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

// NewEncoder returns an encoder with s at rate for frames of frameMs. It
// codes CELT only, as the encoder chose on its own at 64 kbps: its SILK
// and hybrid modes, which a voice hint at 32 kbps selects, cost 1.5–2.3
// times the CPU in gopus.
func (s Settings) NewEncoder(rate, frameMs int) (*Encoder, error) {
	if err := s.checked(); err != nil {
		return nil, err
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

// Encode encodes exactly one frame into a new packet.
func (e *Encoder) Encode(pcm []int16) ([]byte, error) {
	if err := e.checkFrame(pcm); err != nil {
		return nil, err
	}
	n, err := e.e.EncodeInt16(pcm, e.buf)
	if err != nil {
		return nil, fmt.Errorf("opus: %w", err)
	}
	return append([]byte(nil), e.buf[:n]...), nil
}

// reset returns the decoder to the state of a new one.
func (d *Decoder) reset() { d.d.Reset() }

// reset returns the encoder to the state of a new one, settings kept,
// and reports whether it could. gopus v0.1.1's Encoder.Reset leaves the
// input filter's memory (docs/upstream/gopus-reset.md): clearFilter
// clears it as libopus's OPUS_RESET_STATE does, where this gopus has the
// fields.
func (e *Encoder) reset() bool {
	e.e.Reset()
	return clearFilter(e.e)
}

// clearFilter clears the input high-pass filter's memory of gopus's
// internal encoder, which its Reset leaves (hpMem, and the SILK cutoff's
// smoothing, variableHPSmth2Q15 and variableHPSmth2Inited), and reports
// whether the fields were there with the types of gopus v0.1.1. They are
// unexported, so they are reached by reflection; remove this once gopus's
// Reset clears them (docs/upstream/gopus-reset.md).
func clearFilter(e *gopus.Encoder) bool {
	enc := reflect.ValueOf(e).Elem().FieldByName("enc")
	if enc.Kind() != reflect.Pointer || enc.IsNil() {
		return false
	}
	in := enc.Elem()
	hp := in.FieldByName("hpMem")
	smth := in.FieldByName("variableHPSmth2Q15")
	inited := in.FieldByName("variableHPSmth2Inited")
	if !hp.IsValid() || !smth.IsValid() || !inited.IsValid() ||
		hp.Type() != reflect.TypeFor[[4]float32]() || smth.Kind() != reflect.Int32 || inited.Kind() != reflect.Bool {
		return false
	}
	*(*[4]float32)(unsafe.Pointer(hp.UnsafeAddr())) = [4]float32{}
	*(*int32)(unsafe.Pointer(smth.UnsafeAddr())) = 0
	*(*bool)(unsafe.Pointer(inited.UnsafeAddr())) = false
	return true
}
