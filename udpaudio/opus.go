package udpaudio

import "github.com/xiaozhi-hub/hub/ogg"

// plausibleOpus reports whether p is a well-formed mono Opus packet by the
// rules of RFC 6716 §3.4 (R1–R7, ogg.OpusSamples): the firmware encodes
// mono, and random bytes (a datagram forged without the session key
// decrypts to noise) fail these rules about two times in three. It is one
// of the proofs a datagram from a new address must give before the hub
// sends the device's audio there (docs/protocol.md §4.3).
func plausibleOpus(p []byte) bool {
	_, err := ogg.OpusSamples(p)
	return err == nil && p[0]&0x04 == 0 // not stereo
}
