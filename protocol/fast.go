package protocol

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// Fast paths for the messages every device sends: an envelope and a
// JSON-RPC payload with a few top-level members. encoding/json decodes them
// by reflection, allocating a copy of every raw member and, with its large
// stack frames, growing the stack of the connection's read goroutine, which
// an idle device then keeps. The fast paths find the members with a flat,
// non-recursive scan of a document json.Valid has accepted. Whenever
// encoding/json's rules could give a different answer (escapes or non-ASCII
// bytes in a key, a key that matches only when case is ignored, a member of
// an unexpected kind, anything that is an error), they report !ok and the
// caller uses encoding/json, so results and error messages are unchanged.
// Raw members they return share memory with the input.

// fastPaths is switched off by tests to compare with encoding/json.
var fastPaths = true

// topLevel finds the values of keys among the members of the JSON object
// b, which must be valid JSON starting with '{'. vals[i] is the raw value of
// keys[i] (nil when absent); as with encoding/json, the last occurrence of a
// key wins. ok is false when a key needs encoding/json's matching rules.
func topLevel(b []byte, keys []string, vals [][]byte) (ok bool) {
	return members(b, keys, vals, false)
}

// members is topLevel; with only, a key that is not one of keys makes it
// report !ok.
func members(b []byte, keys []string, vals [][]byte, only bool) (ok bool) {
	i := 1 // after '{'
	for {
		i = skipSpace(b, i)
		if i >= len(b) {
			return false
		}
		switch b[i] {
		case '}':
			return true
		case ',':
			i++
			continue
		case '"':
		default:
			return false
		}
		end := i + 1
		for ; end < len(b) && b[end] != '"'; end++ {
			if c := b[end]; c == '\\' || c >= utf8.RuneSelf {
				return false // escaped or non-ASCII key: encoding/json unquotes and folds it
			}
		}
		if end >= len(b) {
			return false
		}
		key := b[i+1 : end]
		i = skipSpace(b, end+1)
		if i >= len(b) || b[i] != ':' {
			return false
		}
		i = skipSpace(b, i+1)
		if i >= len(b) {
			return false
		}
		start := i
		i = skipValue(b, i)
		known := false
		for k, name := range keys {
			if string(key) == name {
				vals[k], known = b[start:i], true
			} else if len(key) == len(name) && asciiEqualFold(key, name) {
				return false // encoding/json would match it case-insensitively
			}
		}
		if only && !known {
			return false
		}
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipValue returns the index just after the JSON value starting at b[i].
// b must be valid JSON.
func skipValue(b []byte, i int) int {
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				i = skipString(b, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return i
	default: // number, true, false, null
		for i < len(b) {
			switch b[i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return i
			}
			i++
		}
		return i
	}
}

// skipString returns the index just after the string starting at b[i] == '"'.
func skipString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return i
}

func asciiEqualFold(a []byte, b string) bool {
	for i := range len(a) {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// plainString returns the value of a JSON string without escapes whose
// bytes are valid UTF-8: what encoding/json would decode it to.
func plainString(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", false
	}
	s := raw[1 : len(raw)-1]
	if bytes.IndexByte(s, '\\') >= 0 || !utf8.Valid(s) {
		return "", false
	}
	return string(s), true
}

// messageType is plainString for a message type, without allocating for
// the types the hub knows.
func messageType(raw []byte) (string, bool) {
	if len(raw) >= 2 && raw[0] == '"' && raw[len(raw)-1] == '"' {
		switch string(raw[1 : len(raw)-1]) {
		case TypeMCP:
			return TypeMCP, true
		case TypeHello:
			return TypeHello, true
		case TypeIoT:
			return TypeIoT, true
		case TypeListen:
			return TypeListen, true
		case TypeAbort:
			return TypeAbort, true
		}
	}
	return plainString(raw)
}

// stringOrNull decodes raw into a string field as encoding/json does when it
// is a plain string, null (the field is left "") or absent.
func stringOrNull(raw []byte) (string, bool) {
	if raw == nil || string(raw) == "null" {
		return "", true
	}
	return plainString(raw)
}

var (
	messageKeys = []string{"type", "session_id", "payload"}
	rpcKeys     = []string{"id", "method", "params", "result", "error"}
)

// decodeMessageFast is DecodeMessage for a well-formed envelope.
func decodeMessageFast(data, trimmed []byte) (Message, bool) {
	if !json.Valid(trimmed) {
		return Message{}, false
	}
	var vals [3][]byte
	if !topLevel(trimmed, messageKeys, vals[:]) || vals[0] == nil {
		return Message{}, false
	}
	m := Message{Raw: data, valid: true}
	var ok bool
	if m.Type, ok = messageType(vals[0]); !ok {
		return Message{}, false
	}
	if m.SessionID, ok = stringOrNull(vals[1]); !ok {
		return Message{}, false
	}
	if len(vals[2]) > 0 && string(vals[2]) != "null" {
		m.Payload = vals[2]
	}
	return m, true
}

// decodeRPCFast is DecodeRPC for a well-formed request, notification or
// result; error replies take the general path.
func decodeRPCFast(trimmed []byte) (RPC, bool) {
	if !json.Valid(trimmed) {
		return RPC{}, false
	}
	return decodeValidRPC(trimmed)
}

// decodeValidRPC is decodeRPCFast for a payload known to be valid JSON.
func decodeValidRPC(trimmed []byte) (RPC, bool) {
	var vals [5][]byte
	if !topLevel(trimmed, rpcKeys, vals[:]) {
		return RPC{}, false
	}
	id, method, params, result, rerr := vals[0], vals[1], vals[2], vals[3], vals[4]
	if len(rerr) > 0 && string(rerr) != "null" {
		return RPC{}, false
	}
	var m RPC
	if len(id) > 0 && string(id) != "null" {
		m.ID = id
	}
	var ok bool
	if m.Method, ok = stringOrNull(method); !ok {
		return RPC{}, false
	}
	m.Params = params
	if len(result) > 0 && string(result) != "null" {
		m.Result = result
	}
	if m.Method == "" && (m.ID == nil || m.Result == nil) {
		return RPC{}, false // malformed: the general path says how
	}
	m.valid = true
	return m, true
}

// DecodePayload is DecodeRPC(m.Payload). For a message decoded by the fast
// path it skips checking again that the payload is valid JSON: it is part of
// the frame, which was checked.
func (m Message) DecodePayload() (RPC, error) {
	if m.valid && fastPaths {
		if trimmed := bytes.TrimSpace(m.Payload); len(trimmed) > 0 && trimmed[0] == '{' {
			if r, ok := decodeValidRPC(trimmed); ok {
				return r, nil
			}
		}
	}
	return DecodeRPC(m.Payload)
}

// ResultMembers is ObjectMembers(r.Result, keys, vals), without checking
// the result again when r was decoded from JSON that was checked.
func (r RPC) ResultMembers(keys []string, vals [][]byte) (ok bool) {
	if !r.valid {
		return ObjectMembers(r.Result, keys, vals)
	}
	return ValidMembers(r.Result, keys, vals)
}

// ValidMembers is ObjectMembers for b known to be valid JSON (a member
// found by ResultMembers or ValidMembers, say): it does not check b again.
func ValidMembers(b []byte, keys []string, vals [][]byte) (ok bool) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '{' {
		return false
	}
	return topLevel(b, keys, vals)
}

// ObjectMembers finds top-level members of a JSON value as encoding/json
// would when decoding it into a struct with those json names: vals[i] is
// the raw value of keys[i], nil when absent, sharing memory with b. ok is
// false when b is not a valid JSON object or when encoding/json's rules for
// keys could matter (escaped, non-ASCII or differently cased keys); callers
// then decode with encoding/json.
func ObjectMembers(b []byte, keys []string, vals [][]byte) (ok bool) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '{' || !json.Valid(b) {
		return false
	}
	return topLevel(b, keys, vals)
}

// OnlyObjectMembers is ObjectMembers for a decoder that disallows unknown
// fields: ok is also false when b has a member that is not one of keys.
func OnlyObjectMembers(b []byte, keys []string, vals [][]byte) (ok bool) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '{' || !json.Valid(b) {
		return false
	}
	return members(b, keys, vals, true)
}

// ArrayElements calls f with each element of the JSON array b, in order,
// sharing memory with b, until f returns false. ok is false when b is not a
// valid JSON array; f is then not called.
func ArrayElements(b []byte, f func(elem []byte) bool) (ok bool) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '[' || !json.Valid(b) {
		return false
	}
	return elements(b, f)
}

// ValidElements is ArrayElements for b known to be valid JSON: it does not
// check b again.
func ValidElements(b []byte, f func(elem []byte) bool) (ok bool) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '[' {
		return false
	}
	return elements(b, f)
}

func elements(b []byte, f func(elem []byte) bool) bool {
	i := 1
	for {
		i = skipSpace(b, i)
		if i >= len(b) || b[i] == ']' {
			return true
		}
		if b[i] == ',' {
			i++
			continue
		}
		start := i
		i = skipValue(b, i)
		if !f(b[start:i]) {
			return true
		}
	}
}

// String decodes the JSON string raw as encoding/json does, without
// reflection when it has no escapes. ok is false when raw is not a string.
func String(raw []byte) (string, bool) {
	if s, ok := plainString(raw); ok {
		return s, true
	}
	if len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}
