package udpaudio

// plausibleOpus reports whether p is a well-formed mono Opus packet by the
// rules of RFC 6716 §3.4 (R1–R7): the firmware encodes mono, and random
// bytes (a datagram forged without the session key decrypts to noise)
// fail these rules about two times in three. It is one of the proofs a
// datagram from a new address must give before the hub sends the
// device's audio there (docs/protocol.md §4.3).
func plausibleOpus(p []byte) bool {
	if len(p) < 1 { // R1
		return false
	}
	toc := p[0]
	if toc&0x04 != 0 { // stereo
		return false
	}
	const maxFrame = 1275
	rest := p[1:]
	switch toc & 0x03 {
	case 0: // one frame
		return len(rest) <= maxFrame // R2
	case 1: // two frames of equal size
		return len(rest)%2 == 0 && len(rest)/2 <= maxFrame // R3
	case 2: // two frames, the first one's length coded
		n1, used, ok := frameLen(rest)
		return ok && n1 <= len(rest)-used && len(rest)-used-n1 <= maxFrame // R4
	}
	// Code 3: a frame count, optional padding, CBR or VBR frames.
	if len(rest) < 1 { // R6, R7
		return false
	}
	fc := rest[0]
	rest = rest[1:]
	m := int(fc & 0x3f)
	if m == 0 || m*frameMicros(toc>>3) > 120000 { // R5
		return false
	}
	if fc&0x40 != 0 { // padding
		pad := 0
		for {
			if len(rest) < 1 {
				return false
			}
			b := rest[0]
			rest = rest[1:]
			if b == 255 {
				pad += 254
				continue
			}
			pad += int(b)
			break
		}
		if pad > len(rest) {
			return false
		}
		rest = rest[:len(rest)-pad]
	}
	if fc&0x80 == 0 { // CBR: R6
		return len(rest)%m == 0 && len(rest)/m <= maxFrame
	}
	total := 0 // VBR: R7
	for range m - 1 {
		n, used, ok := frameLen(rest)
		if !ok {
			return false
		}
		rest = rest[used:]
		total += n
	}
	return total <= len(rest) && len(rest)-total <= maxFrame
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

// frameMicros is the duration of one frame of TOC configuration config.
func frameMicros(config byte) int {
	switch {
	case config < 12: // SILK: 10, 20, 40, 60 ms
		return [4]int{10000, 20000, 40000, 60000}[config%4]
	case config < 16: // hybrid: 10, 20 ms
		return [2]int{10000, 20000}[config%2]
	default: // CELT: 2.5, 5, 10, 20 ms
		return [4]int{2500, 5000, 10000, 20000}[config%4]
	}
}
