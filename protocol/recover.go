package protocol

import (
	"bytes"
	"unicode/utf8"

	"github.com/xiaozhi-hub/hub/internal/jsonscan"
)

// ValidText returns data, a text frame from a device, as valid UTF-8: each
// invalid byte sequence becomes U+FFFD. Outside JSON strings an invalid byte
// is a syntax error either way, and inside one U+FFFD is a valid character,
// so valid JSON stays valid JSON, and nothing the hub stores or serves later
// (tool names, schemas, results, things, events, errors) can carry bytes a
// client fails to decode. It returns data itself when it is valid.
func ValidText(data []byte) []byte {
	if utf8.Valid(data) {
		return data
	}
	return bytes.ToValidUTF8(data, []byte("\uFFFD"))
}

// RecoverReplyID finds the JSON-RPC id of an MCP frame that is not valid
// JSON, such as the error replies of firmware 2.4.2, which inserts the
// message without escaping it (docs/protocol.md §8.2, §12.25):
//
//	{"session_id":"…","type":"mcp","payload":{"jsonrpc":"2.0","id":9,"error":{"message":"Invalid mode: a"b"}}}
//
// It scans, respecting strings, for the envelope's "payload" member and
// then for an "id" member of that payload with an integer value, stopping
// at the first of each: the firmware writes the id before the text that
// breaks the frame. payload is the raw text from the payload's start
// (without the envelope's closing brace), for showing to people. A frame
// that is a bare JSON-RPC object (no "payload") is searched the same way.
func RecoverReplyID(frame []byte) (id int64, payload []byte, ok bool) {
	frame = bytes.TrimSpace(frame)
	if len(frame) == 0 || frame[0] != '{' {
		return 0, nil, false
	}
	payload = frame
	if p := memberValue(frame, "payload"); p >= 0 {
		if frame[p] != '{' {
			return 0, nil, false
		}
		payload = bytes.TrimSuffix(frame[p:], []byte("}")) // the envelope's closing brace
	}
	v := memberValue(payload, "id")
	if v < 0 {
		return 0, nil, false
	}
	end := v
	for end < len(payload) && (payload[end] == '-' || payload[end] >= '0' && payload[end] <= '9') {
		end++
	}
	id, ok = parseIntID(payload[v:end])
	if !ok || end == v {
		return 0, nil, false
	}
	return id, payload, true
}

// memberValue returns the index of the value of the first member named key
// of the object b starts with (b[0] == '{'), or -1. It tracks strings and
// nesting and does not need b to be valid JSON after that member.
func memberValue(b []byte, key string) int {
	depth := 0
	for i := 0; i < len(b); {
		switch b[i] {
		case '{', '[':
			depth++
			i++
		case '}', ']':
			depth--
			if depth <= 0 {
				return -1
			}
			i++
		case '"':
			end := jsonscan.SkipString(b, i)
			if depth == 1 && end-i == len(key)+2 && string(b[i+1:end-1]) == key {
				if j := jsonscan.SkipSpace(b, end); j < len(b) && b[j] == ':' {
					if v := jsonscan.SkipSpace(b, j+1); v < len(b) {
						return v
					}
					return -1
				}
			}
			i = end
		default:
			i++
		}
	}
	return -1
}
