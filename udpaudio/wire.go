// Package udpaudio is the audio half of the firmware's MQTT+UDP transport:
// the encrypted datagram wire (a 16-byte header that is also the AES-128-CTR
// IV, then the Opus frame), the `udp` object of the server hello, per-session
// keys, the sequence rules, and a Server that owns one UDP socket and
// demultiplexes datagrams to sessions by the connection id in the header.
//
// mqttlink opens a Session for each conversation's hello. The wire is
// exactly what firmware 2.4.2's main/protocols/mqtt_protocol.cc builds and
// accepts (docs/protocol.md §4.3); the hub's own rules on top of it (the
// 1,500-byte limit, budgets, sequence window, which datagram may bind a
// session's address, the session table's quotas) are in docs/protocol.md
// §4.3 too.
package udpaudio

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
)

// HeaderSize is the size of a datagram header, which is also the AES block
// size and the CTR IV.
const HeaderSize = 16

// PacketType is the only datagram type the firmware sends or accepts (byte 0).
const PacketType = 0x01

// MaxDatagram is the largest datagram the firmware receives whole: its
// receive buffer is 1500 bytes (esp-ml307 esp_udp.cc), longer ones are cut
// and then fail the length rule.
const MaxDatagram = 1500

// MaxPayload is the largest Opus frame one datagram can carry to a device.
const MaxPayload = MaxDatagram - HeaderSize

// Flag values in byte 1. The firmware checks neither flags nor ssrc. The
// uplink header copies byte 1 from the server nonce (uplinkFlags), so
// downlink headers use another value: otherwise, with the same ssrc,
// timestamp and sequence, both directions would encrypt with the same
// keystream.
const (
	uplinkFlags   = 0x00
	downlinkFlags = 0x01
)

// Header is a decoded datagram header. All fields are big-endian on the wire:
//
//	|type 1|flags 1|payload_len 2|ssrc 4|timestamp 4|sequence 4|
type Header struct {
	Type      byte
	Flags     byte
	Length    uint16 // payload length
	SSRC      uint32 // the connection id, copied from the server nonce
	Timestamp uint32
	Sequence  uint32
}

// Put writes h into b[:HeaderSize].
func (h Header) Put(b []byte) {
	_ = b[HeaderSize-1]
	b[0] = h.Type
	b[1] = h.Flags
	binary.BigEndian.PutUint16(b[2:4], h.Length)
	binary.BigEndian.PutUint32(b[4:8], h.SSRC)
	binary.BigEndian.PutUint32(b[8:12], h.Timestamp)
	binary.BigEndian.PutUint32(b[12:16], h.Sequence)
}

// Wire errors: why a datagram was dropped. Both ends apply the same shape
// rules (mqtt_protocol.cc OnMessage): at least a header, type 0x01, and a
// header length equal to the datagram length minus the header.
var (
	ErrShort     = errors.New("udpaudio: datagram shorter than its 16-byte header")
	ErrType      = errors.New("udpaudio: datagram type is not 0x01")
	ErrLength    = errors.New("udpaudio: header payload length differs from the datagram's")
	ErrOld       = errors.New("udpaudio: sequence not newer than the last accepted one (replayed or late)")
	ErrTooLarge  = fmt.Errorf("udpaudio: payload larger than %d bytes (the device's receive buffer is %d)", MaxPayload, MaxDatagram)
	ErrNoAddress = errors.New("udpaudio: the device has sent no audio yet, so its address is unknown")
	ErrClosed    = errors.New("udpaudio: session closed")
)

// ParseHeader decodes the header of datagram b and checks the shape rules
// the firmware applies to every datagram.
func ParseHeader(b []byte) (Header, error) {
	if len(b) < HeaderSize {
		return Header{}, ErrShort
	}
	h := Header{
		Type:      b[0],
		Flags:     b[1],
		Length:    binary.BigEndian.Uint16(b[2:4]),
		SSRC:      binary.BigEndian.Uint32(b[4:8]),
		Timestamp: binary.BigEndian.Uint32(b[8:12]),
		Sequence:  binary.BigEndian.Uint32(b[12:16]),
	}
	if h.Type != PacketType {
		return h, ErrType
	}
	if int(h.Length) != len(b)-HeaderSize {
		return h, ErrLength
	}
	return h, nil
}

// Seal appends to dst the datagram for payload: h (with Length set from the
// payload) followed by payload encrypted with AES-128-CTR, the header being
// the IV.
func Seal(dst []byte, block cipher.Block, h Header, payload []byte) []byte {
	h.Length = uint16(len(payload))
	n := len(dst)
	dst = append(dst, make([]byte, HeaderSize+len(payload))...)
	out := dst[n:]
	h.Put(out)
	cipher.NewCTR(block, out[:HeaderSize]).XORKeyStream(out[HeaderSize:], payload)
	return dst
}

// Open decrypts the payload of datagram b (whose header was checked by
// ParseHeader) into dst, appending. CTR needs no padding: encryption and
// decryption are the same operation.
func Open(dst []byte, block cipher.Block, b []byte) []byte {
	n := len(dst)
	dst = append(dst, make([]byte, len(b)-HeaderSize)...)
	cipher.NewCTR(block, b[:HeaderSize]).XORKeyStream(dst[n:], b[HeaderSize:])
	return dst
}

// HelloUDP is the `udp` object of the server hello over MQTT. The firmware
// requires every member (mqtt_protocol.cc ParseServerHello): server a string
// (IPv4 address or DNS name: the device connects its socket to it), port
// 1..65535, key and nonce 32 hex digits each. A bad object makes the device
// ignore the hello and time out after 10 s.
type HelloUDP struct {
	Server string `json:"server"`
	Port   int    `json:"port"`
	Key    string `json:"key"`
	Nonce  string `json:"nonce"`
}

// Keys are one session's secrets: the AES-128 key and the nonce whose bytes
// 0, 1 and 4..7 the device copies into every uplink header.
type Keys struct {
	Key   [16]byte
	Nonce [16]byte
}

// NewKeys returns fresh random keys for connection id ssrc: nonce[0] is the
// packet type, nonce[1] the uplink flags, nonce[4..7] the ssrc; bytes 2..3
// and 8..15 are overwritten by the device and are random here.
func NewKeys(ssrc uint32) (Keys, error) {
	var k Keys
	if _, err := rand.Read(k.Key[:]); err != nil {
		return k, fmt.Errorf("udpaudio: session key: %w", err)
	}
	if _, err := rand.Read(k.Nonce[:]); err != nil {
		return k, fmt.Errorf("udpaudio: session nonce: %w", err)
	}
	k.Nonce[0] = PacketType
	k.Nonce[1] = uplinkFlags
	binary.BigEndian.PutUint32(k.Nonce[4:8], ssrc)
	return k, nil
}

// Hello returns the hello's `udp` object advertising host:port.
func (k Keys) Hello(host string, port int) HelloUDP {
	return HelloUDP{Server: host, Port: port, Key: hex.EncodeToString(k.Key[:]), Nonce: hex.EncodeToString(k.Nonce[:])}
}

// SSRC returns the connection id carried in the nonce.
func (k Keys) SSRC() uint32 { return binary.BigEndian.Uint32(k.Nonce[4:8]) }

func (k Keys) block() cipher.Block {
	b, err := aes.NewCipher(k.Key[:])
	if err != nil {
		panic(err) // unreachable: the key is 16 bytes
	}
	return b
}
