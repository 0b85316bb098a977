package sim

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"strings"
)

// The helpers below read JSON the way cJSON does, which the firmware uses.

// item is cJSON_GetObjectItem: a case-insensitive member lookup.
func item(m map[string]json.RawMessage, key string) json.RawMessage {
	if v, ok := m[key]; ok {
		return v
	}
	for k, v := range m {
		if strings.EqualFold(k, key) {
			return v
		}
	}
	return nil
}

// kind returns the first byte of a JSON value: '{', '[', '"', 't', 'f', 'n',
// or '0' for numbers; 0 when raw is absent.
func kind(raw json.RawMessage) byte {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return 0
	}
	switch c := raw[0]; {
	case c == '-' || (c >= '0' && c <= '9'):
		return '0'
	default:
		return c
	}
}

// str is cJSON_IsString + valuestring.
func str(raw json.RawMessage) (string, bool) {
	if kind(raw) != '"' {
		return "", false
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// number is cJSON_IsNumber + valuedouble.
func number(raw json.RawMessage) (float64, bool) {
	if kind(raw) != '0' {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(bytes.TrimSpace(raw)), 64)
	if err != nil && !math.IsInf(f, 0) { // out of range saturates, like strtod
		return 0, false
	}
	return f, true
}

// cInt is cJSON's valueint: saturated to int32, fraction truncated.
func cInt(f float64) int {
	switch {
	case f >= math.MaxInt32:
		return math.MaxInt32
	case f <= math.MinInt32:
		return math.MinInt32
	default:
		return int(f)
	}
}

// object decodes a JSON object; ok is false for anything else.
func object(raw json.RawMessage) (map[string]json.RawMessage, bool) {
	if kind(raw) != '{' {
		return nil, false
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return nil, false
	}
	return m, true
}

// marshal is json.Marshal without HTML escaping: cJSON leaves <, > and &
// alone, and the byte count matters for tools/list pages.
func marshal(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return []byte("null")
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// quote returns s as a JSON string.
func quote(s string) string { return string(marshal(s)) }
