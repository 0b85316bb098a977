package schema_test

import (
	"fmt"
	"strings"
)

// fanOut is a $ref bomb: each of n definitions refers twice to the next,
// so one value is checked against the last definition 2^n times, from a
// schema of about 50 bytes per level (n = 24: 1.3 KB).
func fanOut(n int) string {
	var b strings.Builder
	b.WriteString(`{"type":"object","properties":{"x":{"$ref":"#/$defs/d0"},"y":{"type":"array","items":{"$ref":"#/$defs/d0"}}},"$defs":{`)
	for i := range n {
		fmt.Fprintf(&b, `"d%d":{"allOf":[{"$ref":"#/$defs/d%d"},{"$ref":"#/$defs/d%d"}]},`, i, i+1, i+1)
	}
	fmt.Fprintf(&b, `"d%d":{"type":"integer","minimum":0}}}`, n)
	return b.String()
}

// nested is a schema nested depth levels deep through properties (depth
// 3700: 74 KB), which the library compiles in time quadratic in depth.
func nested(depth int) string {
	return `{"type":"object"` + strings.Repeat(`,"properties":{"a":{"type":"object"`, depth) + strings.Repeat("}}", depth) + "}"
}
