package protocol

import (
	"encoding/binary"
	"fmt"
)

// AudioFrame is one parsed binary frame.
type AudioFrame struct {
	Type      uint16 // 0 = Opus (v2, v3); always 0 for v1
	Timestamp uint32 // v2 only: server-AEC timestamp in ms
	Payload   []byte // the Opus packet (aliases the input)
}

// ParseAudioFrame parses a binary WebSocket frame in the framing of the
// negotiated protocol version (docs/protocol.md §3.4). All multi-byte fields
// are big-endian; v2 and v3 payload sizes must be exact. Unknown versions are
// treated as v1 (raw Opus), as the firmware does.
func ParseAudioFrame(version int, b []byte) (AudioFrame, error) {
	switch version {
	case 2:
		if len(b) < 16 {
			return AudioFrame{}, fmt.Errorf("%w: v2 audio frame of %d bytes is shorter than its 16-byte header", ErrMalformed, len(b))
		}
		size := binary.BigEndian.Uint32(b[12:16])
		if uint64(size) != uint64(len(b)-16) {
			return AudioFrame{}, fmt.Errorf("%w: v2 audio frame says payload_size %d but carries %d bytes", ErrMalformed, size, len(b)-16)
		}
		return AudioFrame{Type: binary.BigEndian.Uint16(b[2:4]), Timestamp: binary.BigEndian.Uint32(b[8:12]), Payload: b[16:]}, nil
	case 3:
		if len(b) < 4 {
			return AudioFrame{}, fmt.Errorf("%w: v3 audio frame of %d bytes is shorter than its 4-byte header", ErrMalformed, len(b))
		}
		size := binary.BigEndian.Uint16(b[2:4])
		if int(size) != len(b)-4 {
			return AudioFrame{}, fmt.Errorf("%w: v3 audio frame says payload_size %d but carries %d bytes", ErrMalformed, size, len(b)-4)
		}
		return AudioFrame{Type: uint16(b[0]), Payload: b[4:]}, nil
	default:
		return AudioFrame{Payload: b}, nil
	}
}

// AppendAudioFrame frames an Opus packet for the given protocol version.
func AppendAudioFrame(dst []byte, version int, timestamp uint32, opus []byte) []byte {
	switch version {
	case 2:
		var h [16]byte
		binary.BigEndian.PutUint16(h[0:2], 2)
		binary.BigEndian.PutUint32(h[8:12], timestamp)
		binary.BigEndian.PutUint32(h[12:16], uint32(len(opus)))
		dst = append(dst, h[:]...)
	case 3:
		var h [4]byte
		binary.BigEndian.PutUint16(h[2:4], uint16(len(opus)))
		dst = append(dst, h[:]...)
	}
	return append(dst, opus...)
}
