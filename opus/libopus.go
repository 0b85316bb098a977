//go:build libopus

package opus

/*
#cgo pkg-config: opus
#include <opus.h>

// opus_encoder_ctl and opus_decoder_ctl are variadic, which cgo cannot
// call: these wrap the requests the hub makes.
static int xz_encoder_setup(OpusEncoder *e, int complexity, int bitrate) {
	int r = opus_encoder_ctl(e, OPUS_SET_COMPLEXITY(complexity));
	if (r == OPUS_OK) r = opus_encoder_ctl(e, OPUS_SET_BITRATE(bitrate));
	if (r == OPUS_OK) r = opus_encoder_ctl(e, OPUS_SET_VBR(1));
	return r;
}
static int xz_encoder_reset(OpusEncoder *e) { return opus_encoder_ctl(e, OPUS_RESET_STATE); }
static int xz_decoder_reset(OpusDecoder *d) { return opus_decoder_ctl(d, OPUS_RESET_STATE); }
*/
import "C"

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"
)

// Implementation is the Opus implementation built in.
const Implementation = "libopus"

func libopusError(code C.int) error {
	return errors.New(C.GoString(C.opus_strerror(code)))
}

// Decoder decodes one device's uplink packets to 16-bit mono PCM.
type Decoder struct {
	d     *C.OpusDecoder // freed by a cleanup once the Decoder is unreachable
	buf   []int16
	shelf *shelf[*Decoder] // made by Codec: Release puts it back
}

// NewDecoder returns a decoder to rate (8, 12, 16, 24 or 48 kHz).
func NewDecoder(rate int) (*Decoder, error) {
	var code C.int
	d := C.opus_decoder_create(C.opus_int32(rate), 1, &code)
	if code != C.OPUS_OK {
		return nil, fmt.Errorf("opus decoder at %d Hz: %w", rate, libopusError(code))
	}
	dec := &Decoder{d: d, buf: make([]int16, rate*120/1000)} // the longest Opus packet is 120 ms
	runtime.AddCleanup(dec, func(d *C.OpusDecoder) { C.opus_decoder_destroy(d) }, d)
	return dec, nil
}

// Decode decodes one packet into a new slice of PCM.
func (d *Decoder) Decode(packet []byte) ([]int16, error) {
	if len(packet) == 0 {
		return nil, ErrEmpty // libopus would conceal a lost packet instead
	}
	n := C.opus_decode(d.d, (*C.uchar)(unsafe.Pointer(&packet[0])), C.opus_int32(len(packet)),
		(*C.opus_int16)(unsafe.Pointer(&d.buf[0])), C.int(len(d.buf)), 0)
	runtime.KeepAlive(d)
	if n < 0 {
		return nil, fmt.Errorf("opus: %w", libopusError(n))
	}
	return append([]int16(nil), d.buf[:n]...), nil
}

// reset returns the decoder to the state of a new one.
func (d *Decoder) reset() {
	C.xz_decoder_reset(d.d)
	runtime.KeepAlive(d)
}

// Encoder encodes 16-bit mono PCM into packets of one frame each.
type Encoder struct {
	e     *C.OpusEncoder // freed by a cleanup once the Encoder is unreachable
	frame int            // samples per packet
	buf   []byte
	shelf *shelf[*Encoder] // made by Codec: Release puts it back
}

// NewEncoder returns an encoder with s at rate for frames of frameMs. It
// codes CELT only (the restricted low-delay application), as gopus.go's
// does.
func (s Settings) NewEncoder(rate, frameMs int) (*Encoder, error) {
	if err := s.checked(); err != nil {
		return nil, err
	}
	switch frameMs {
	case 10, 20, 40, 60:
	default:
		return nil, fmt.Errorf("opus encoder: %d ms frames: not 10, 20, 40 or 60", frameMs)
	}
	var code C.int
	e := C.opus_encoder_create(C.opus_int32(rate), 1, C.OPUS_APPLICATION_RESTRICTED_LOWDELAY, &code)
	if code != C.OPUS_OK {
		return nil, fmt.Errorf("opus encoder at %d Hz: %w", rate, libopusError(code))
	}
	enc := &Encoder{e: e, frame: rate * frameMs / 1000, buf: make([]byte, 4000)}
	runtime.AddCleanup(enc, func(e *C.OpusEncoder) { C.opus_encoder_destroy(e) }, e)
	if code := C.xz_encoder_setup(e, C.int(s.Complexity), C.int(s.Bitrate)); code != C.OPUS_OK {
		return nil, fmt.Errorf("opus encoder: %w", libopusError(code))
	}
	return enc, nil
}

// Encode encodes exactly one frame into a new packet.
func (e *Encoder) Encode(pcm []int16) ([]byte, error) {
	if err := e.checkFrame(pcm); err != nil {
		return nil, err
	}
	n := C.opus_encode(e.e, (*C.opus_int16)(unsafe.Pointer(&pcm[0])), C.int(e.frame),
		(*C.uchar)(unsafe.Pointer(&e.buf[0])), C.opus_int32(len(e.buf)))
	runtime.KeepAlive(e)
	if n < 0 {
		return nil, fmt.Errorf("opus: %w", libopusError(n))
	}
	return append([]byte(nil), e.buf[:n]...), nil
}

// reset returns the encoder to the state of a new one, settings kept
// (OPUS_RESET_STATE resets all of a libopus encoder), and reports whether
// it could.
func (e *Encoder) reset() bool {
	ok := C.xz_encoder_reset(e.e) == C.OPUS_OK
	runtime.KeepAlive(e)
	return ok
}
