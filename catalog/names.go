package catalog

import (
	"crypto/sha256"
	"encoding/base32"
	"regexp"
	"strings"
)

// Agent tool names must be valid OpenAI and Anthropic function names:
// ^[a-zA-Z0-9_-]{1,64}$. Device tool names are dotted (self.lamp.turn_on),
// may be Chinese (self.灯.开关), and device ids are MAC addresses with colons,
// so every agent name is derived, deterministically, from the device id and
// the tool's own name:
//
//	d5kq3m2xa_self-lamp-turn_on
//	└──┬────┘ └──────┬────────┘
//	device key   tool part
//
// The device key is "d" and 8 base32 characters of SHA-256(device id). The
// tool part is the tool name with "." written as "-" when that is lossless
// (the name is dot-separated words of [A-Za-z0-9_] and short enough).
// Otherwise it is the ASCII words of the name, "--" and 8 base32 characters
// of SHA-256(tool name): "self.灯.开关" → "self--…" and "self.风扇.开关" →
// "self--…" with different hashes. Lossless parts never contain "--", so the
// two forms cannot meet. The same inputs give the same name on every hub and
// after every restart; the catalog keeps the reverse map and checks
// uniqueness (see Catalog.Lookup for the one-in-2^40 collision case).
const (
	MaxNameLen = 64
	keyLen     = 8  // base32 characters of the device key hash
	hashLen    = 8  // base32 characters of a tool part hash
	longLen    = 13 // for the rare collision
)

// NamePattern is the pattern every agent tool name matches.
var NamePattern = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

var b32 = base32.StdEncoding.WithPadding(base32.NoPadding)

func hash32(s string, n int) string {
	sum := sha256.Sum256([]byte(s))
	return strings.ToLower(b32.EncodeToString(sum[:]))[:n]
}

// DeviceKey returns the short key that prefixes the agent names of a
// device's tools.
func DeviceKey(deviceID string) string { return "d" + hash32(deviceID, keyLen) }

func longDeviceKey(deviceID string) string { return "d" + hash32(deviceID, longLen) }

// Name returns the agent name of a device's tool (or IoT target such as
// "Lamp.TurnOn"), as the catalog assigns it unless two names collide.
func Name(deviceID, tool string) string {
	key := DeviceKey(deviceID)
	return key + "_" + toolPart(tool, MaxNameLen-len(key)-1, hashLen)
}

// toolPart encodes a tool name in at most max characters of [A-Za-z0-9_-].
func toolPart(tool string, max, hl int) string {
	if lossless(tool) && len(tool) <= max {
		return strings.ReplaceAll(tool, ".", "-")
	}
	readable := strings.Join(words(tool), "-")
	room := max - 2 - hl
	if len(readable) > room {
		readable = strings.TrimRight(readable[:room], "-")
	}
	return readable + "--" + hash32(tool, hl)
}

// lossless reports whether tool is dot-separated non-empty words of
// [A-Za-z0-9_], which "." → "-" encodes reversibly.
func lossless(tool string) bool {
	if tool == "" {
		return false
	}
	for _, w := range strings.Split(tool, ".") {
		if w == "" {
			return false
		}
		for i := 0; i < len(w); i++ {
			if !wordByte(w[i]) {
				return false
			}
		}
	}
	return true
}

func wordByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// words returns the runs of [A-Za-z0-9_] in s.
func words(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r >= 0x80 || !wordByte(byte(r)) })
}
