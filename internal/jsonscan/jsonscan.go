// Package jsonscan finds the top-level members of a JSON object or the
// elements of a JSON array without reflection, for the messages the hub
// decodes on every frame (protocol) or request (api). Every function agrees
// with encoding/json decoding into a struct with those json names: whenever
// encoding/json's rules could give a different answer (escapes or non-ASCII
// bytes in a key, a key that matches only when case is ignored), it reports
// !ok and the caller decodes with encoding/json. Raw values it returns share
// memory with the input.
package jsonscan

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

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
		i = SkipSpace(b, i)
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
		i = SkipSpace(b, end+1)
		if i >= len(b) || b[i] != ':' {
			return false
		}
		i = SkipSpace(b, i+1)
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

// SkipSpace returns the index of the first byte at or after i that is not
// JSON white space.
func SkipSpace(b []byte, i int) int {
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
		return SkipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				i = SkipString(b, i)
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

// SkipString returns the index just after the string starting at b[i] == '"'.
func SkipString(b []byte, i int) int {
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

// PlainString returns the value of a JSON string without escapes whose
// bytes are valid UTF-8: what encoding/json would decode it to.
func PlainString(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", false
	}
	s := raw[1 : len(raw)-1]
	if bytes.IndexByte(s, '\\') >= 0 || !utf8.Valid(s) {
		return "", false
	}
	return string(s), true
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

// arrayElements calls f with each element of the JSON array b, in order,
// sharing memory with b, until f returns false. ok is false when b is not a
// valid JSON array; f is then not called.
func arrayElements(b []byte, f func(elem []byte) bool) (ok bool) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '[' || !json.Valid(b) {
		return false
	}
	return elements(b, f)
}

// ValidElements is arrayElements for b known to be valid JSON: it does not
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
		i = SkipSpace(b, i)
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
	if s, ok := PlainString(raw); ok {
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
