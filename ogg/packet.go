package ogg

import "errors"

// ErrPacket is the error for an Opus packet whose framing breaks the rules
// of RFC 6716 §3.4 (R1–R7).
var ErrPacket = errors.New("ogg: not a valid Opus packet")

// maxFrame is the largest Opus frame, in bytes (RFC 6716 §3.4, R2).
const maxFrame = 1275

// maxSamples is the longest Opus packet, 120 ms, in 48 kHz samples (R5).
const maxSamples = 120 * 48

// OpusSamples returns the duration of one Opus packet in 48 kHz samples,
// read from its TOC byte and frame count (RFC 6716 §3.1–3.2), or ErrPacket
// when its framing is invalid: empty (R1), a frame over 1,275 bytes (R2),
// code 1 with an odd length (R3), code 2 with a first frame longer than
// the packet (R4), code 3 with no frames or more than 120 ms of them
// (R5; so at most 48), or whose padding and frame lengths do not fit the
// packet (R6, R7). It allocates nothing: it is run on every packet a
// device sends.
func OpusSamples(p []byte) (int, error) {
	if len(p) < 1 { // R1
		return 0, ErrPacket
	}
	toc := p[0]
	frame := frameSamples(toc >> 3)
	rest := p[1:]
	switch toc & 0x03 {
	case 0: // one frame
		if len(rest) > maxFrame { // R2
			return 0, ErrPacket
		}
		return frame, nil
	case 1: // two frames of equal size
		if len(rest)%2 != 0 || len(rest)/2 > maxFrame { // R3
			return 0, ErrPacket
		}
		return 2 * frame, nil
	case 2: // two frames, the first one's length coded
		n1, used, ok := frameLen(rest)
		if !ok || n1 > len(rest)-used || len(rest)-used-n1 > maxFrame { // R4
			return 0, ErrPacket
		}
		return 2 * frame, nil
	}
	// Code 3: a frame count byte, optional padding, CBR or VBR frames.
	if len(rest) < 1 { // R6, R7: the count byte is missing
		return 0, ErrPacket
	}
	fc := rest[0]
	rest = rest[1:]
	m := int(fc & 0x3f)
	if m == 0 || m*frame > maxSamples { // R5
		return 0, ErrPacket
	}
	if fc&0x40 != 0 { // padding: its length bytes, then the padding at the end
		pad := 0
		for {
			if len(rest) < 1 {
				return 0, ErrPacket
			}
			b := rest[0]
			rest = rest[1:]
			if b < 255 {
				pad += int(b)
				break
			}
			pad += 254
		}
		if pad > len(rest) {
			return 0, ErrPacket
		}
		rest = rest[:len(rest)-pad]
	}
	if fc&0x80 == 0 { // CBR: R6
		if len(rest)%m != 0 || len(rest)/m > maxFrame {
			return 0, ErrPacket
		}
		return m * frame, nil
	}
	total := 0 // VBR: R7, the last frame's length is what is left
	for range m - 1 {
		n, used, ok := frameLen(rest)
		if !ok || n > maxFrame {
			return 0, ErrPacket
		}
		rest = rest[used:]
		total += n
	}
	if total > len(rest) || len(rest)-total > maxFrame {
		return 0, ErrPacket
	}
	return m * frame, nil
}

// frameLen decodes a frame length (RFC 6716 §3.2.1): one byte below 252,
// else two.
func frameLen(b []byte) (n, used int, ok bool) {
	if len(b) < 1 {
		return 0, 0, false
	}
	if b[0] < 252 {
		return int(b[0]), 1, true
	}
	if len(b) < 2 {
		return 0, 0, false
	}
	return int(b[1])*4 + int(b[0]), 2, true
}

// frameSamples is the duration of one frame of TOC configuration config
// in 48 kHz samples (RFC 6716 §3.1, Table 2).
func frameSamples(config byte) int {
	switch {
	case config < 12: // SILK: 10, 20, 40, 60 ms
		return [4]int{480, 960, 1920, 2880}[config%4]
	case config < 16: // hybrid: 10, 20 ms
		return [2]int{480, 960}[config%2]
	default: // CELT: 2.5, 5, 10, 20 ms
		return [4]int{120, 240, 480, 960}[config%4]
	}
}
