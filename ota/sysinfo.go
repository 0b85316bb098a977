package ota

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"unicode/utf8"
)

// The system information a device sends at its OTA check is kept in a
// bounded summary: a person needs the board, chip, MAC, firmware version,
// partitions and network, not 64 KB of whatever a client sent. The summary
// keeps the firmware's fields first, within these bounds, and marks what
// it cut with "_truncated": true.
const (
	maxInfoBytes  = 4 << 10
	maxInfoDepth  = 4
	maxInfoKeys   = 32
	maxInfoItems  = 16
	maxInfoString = 128
)

// infoFirst are the firmware's members (device-protocol.md §2.1), kept
// first when the summary has to cut.
var infoFirst = []string{"mac_address", "uuid", "board", "chip_model_name", "application", "version",
	"language", "flash_size", "minimum_free_heap_size", "ota", "partition_table", "chip_info", "display"}

// summarizeSystemInfo returns a bounded summary of body, a JSON object.
func summarizeSystemInfo(body []byte) json.RawMessage {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v map[string]any
	if dec.Decode(&v) != nil {
		return nil
	}
	cut := false
	out := encodeInfo(v, 0, maxInfoBytes-len(`,"_truncated":true}`), &cut)
	if cut {
		out = append(out[:len(out)-1], `,"_truncated":true}`...)
		if len(out) == len(`{,"_truncated":true}`) {
			out = []byte(`{"_truncated":true}`)
		}
	}
	return out
}

// encodeInfo encodes v within budget bytes, cutting strings, members and
// items beyond the bounds; it returns nil when even an empty value does not
// fit.
func encodeInfo(v any, depth, budget int, cut *bool) []byte {
	var out []byte
	switch x := v.(type) {
	case map[string]any:
		if depth >= maxInfoDepth {
			*cut = true
			return fit([]byte("{}"), budget)
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		if depth == 0 {
			slices.SortStableFunc(keys, func(a, b string) int { return rank(a) - rank(b) })
		}
		out = []byte("{")
		n := 0
		for _, k := range keys {
			if n == maxInfoKeys || len(k) > 64 {
				*cut = true
				continue
			}
			key, _ := json.Marshal(k)
			val := encodeInfo(x[k], depth+1, budget-len(out)-len(key)-3, cut)
			if val == nil {
				*cut = true
				continue
			}
			if n > 0 {
				out = append(out, ',')
			}
			out = append(append(append(out, key...), ':'), val...)
			n++
		}
		out = append(out, '}')
	case []any:
		if depth >= maxInfoDepth {
			*cut = true
			return fit([]byte("[]"), budget)
		}
		out = []byte("[")
		for i, item := range x {
			if i == maxInfoItems {
				*cut = true
				break
			}
			val := encodeInfo(item, depth+1, budget-len(out)-2, cut)
			if val == nil {
				*cut = true
				break
			}
			if i > 0 {
				out = append(out, ',')
			}
			out = append(out, val...)
		}
		out = append(out, ']')
	case string:
		if len(x) > maxInfoString {
			*cut = true
			x = truncateUTF8(x, maxInfoString) + "…"
		}
		out, _ = json.Marshal(x)
	case json.Number:
		out = []byte(x)
		if len(out) > 32 {
			*cut = true
			out = []byte("null")
		}
	default: // bool, nil
		out, _ = json.Marshal(x)
	}
	return fit(out, budget)
}

func fit(b []byte, budget int) []byte {
	if len(b) > budget {
		return nil
	}
	return b
}

func rank(key string) int {
	if i := slices.Index(infoFirst, key); i >= 0 {
		return i
	}
	return len(infoFirst)
}

func truncateUTF8(s string, n int) string {
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return strings.ToValidUTF8(s[:n], "")
}
