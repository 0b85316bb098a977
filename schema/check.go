package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
)

// Bounds on a tool's inputSchema. A device writes its schema, so the hub
// checks it before the schema library sees it: the library's compile time
// grows with nesting and its validation time with how often $ref chains
// branch (a 1.3 KB schema whose definitions each refer twice to the next
// one costs seconds per call). Firmware schemas are flat objects of a few
// hundred bytes (one tools/list page holds at most ~8 KB), far inside these.
const (
	MaxSchemaBytes = 16 << 10 // bytes of JSON
	MaxSchemaDepth = 24       // nested objects and arrays
	MaxSchemaRefs  = 64       // $ref keywords
	// MaxSchemaNodes bounds the schema's size with every $ref expanded in
	// place: the number of subschemas one instance value can be checked
	// against. It is what a reference graph that fans out would multiply.
	MaxSchemaNodes = 1024
)

// ErrUnchecked is wrapped by Check's errors: the schema is outside what
// the hub checks arguments against, so it leaves the checking to the device.
var ErrUnchecked = errors.New("arguments are not checked by the hub")

// standardDrafts are the $schema values the library has built in; anything
// else would be fetched, which the hub never does.
var standardDrafts = map[string]bool{
	"http://json-schema.org/draft-04/schema":       true,
	"http://json-schema.org/draft-06/schema":       true,
	"http://json-schema.org/draft-07/schema":       true,
	"https://json-schema.org/draft/2019-09/schema": true,
	"https://json-schema.org/draft/2020-12/schema": true,
}

// Check reports whether schema is within the bounds above and refers only
// to itself. It costs one pass over at most MaxSchemaBytes of JSON. The
// error (wrapping ErrUnchecked) says why, in words for the tool listing.
func Check(schema json.RawMessage) error {
	_, err := check(schema)
	return err
}

// check is Check, also returning the expanded size (see MaxSchemaNodes).
func check(schema json.RawMessage) (int, error) {
	if len(schema) > MaxSchemaBytes {
		return 0, unchecked("inputSchema is %d bytes, more than the %d the hub checks", len(schema), MaxSchemaBytes)
	}
	c := checker{anchors: map[string]any{}}
	root, err := c.parse(schema)
	if err != nil {
		return 0, err
	}
	if err := c.walk(root); err != nil {
		return 0, err
	}
	for _, r := range c.refs {
		if r.ref, err = c.resolve(r); err != nil {
			return 0, err
		}
	}
	c.memo = map[*node]int{}
	c.active = map[*node]bool{}
	n, err := c.expand(root)
	if err != nil {
		return 0, err
	}
	if n > MaxSchemaNodes {
		return 0, unchecked("inputSchema expands through $ref to more than %d subschemas", MaxSchemaNodes)
	}
	return max(n, 1), nil
}

func unchecked(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrUnchecked, fmt.Sprintf(format, args...))
}

// node is a parsed JSON object or array; other values are left as they
// are. Keeping pointers lets expand memoize by subschema.
type node struct {
	keys []string // object keys in order; nil for arrays
	vals []any
	ref  *node // target of this object's $ref, set by walk
}

type checker struct {
	root    *node
	anchors map[string]any // plain-name fragments ($anchor, "#name" ids)
	refs    []*node        // objects with a $ref
	memo    map[*node]int
	active  map[*node]bool
}

// parse reads schema into nodes, refusing deep nesting before it recurses.
func (c *checker) parse(schema json.RawMessage) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(schema))
	dec.UseNumber()
	v, err := c.value(dec, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, unchecked("inputSchema is not one JSON value")
	}
	if n, ok := v.(*node); ok && n.keys != nil {
		c.root = n
		return n, nil
	}
	if b, ok := v.(bool); ok {
		return b, nil
	}
	return nil, unchecked("inputSchema is not a JSON object")
}

func (c *checker) value(dec *json.Decoder, depth int) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, unchecked("inputSchema is not valid JSON: %v", err)
	}
	d, ok := tok.(json.Delim)
	if !ok {
		if n, isNum := tok.(json.Number); isNum && !saneNumber(string(n)) {
			return nil, unchecked("inputSchema has the number %s, beyond what the hub checks", shorten(string(n)))
		}
		return tok, nil
	}
	if depth >= MaxSchemaDepth {
		return nil, unchecked("inputSchema nests deeper than %d levels", MaxSchemaDepth)
	}
	n := &node{}
	if d == '{' {
		n.keys = []string{}
	}
	for dec.More() {
		if d == '{' {
			k, err := dec.Token()
			if err != nil {
				return nil, unchecked("inputSchema is not valid JSON: %v", err)
			}
			n.keys = append(n.keys, k.(string))
		}
		v, err := c.value(dec, depth+1)
		if err != nil {
			return nil, err
		}
		n.vals = append(n.vals, v)
	}
	if _, err := dec.Token(); err != nil {
		return nil, unchecked("inputSchema is not valid JSON: %v", err)
	}
	return n, nil
}

// walk checks keywords that reach outside the schema and collects $refs
// and anchors. It looks at every object, data (const, enum, default) too:
// a false alarm only turns the hub's checking off for that tool.
func (c *checker) walk(v any) error {
	n, ok := v.(*node)
	if !ok {
		return nil
	}
	for i, k := range n.keys {
		s, isStr := n.vals[i].(string)
		if !isStr {
			continue
		}
		switch k {
		case "$ref":
			if !strings.HasPrefix(s, "#") {
				return unchecked("inputSchema refers to %q; the hub loads no references outside the schema", shorten(s))
			}
			if len(c.refs) == MaxSchemaRefs {
				return unchecked("inputSchema has more than %d $ref", MaxSchemaRefs)
			}
			c.refs = append(c.refs, n)
		case "$dynamicRef", "$recursiveRef":
			return unchecked("inputSchema uses %s, which the hub does not check", k)
		case "$schema":
			if !standardDrafts[strings.TrimSuffix(s, "#")] {
				return unchecked("inputSchema names meta-schema %q; the hub knows only the standard drafts", shorten(s))
			}
		case "$anchor":
			c.anchors[s] = n
		case "$id", "id":
			if !strings.HasPrefix(s, "#") {
				return unchecked("inputSchema sets %s %q; the hub checks only schemas without embedded resources", k, shorten(s))
			}
			c.anchors[s[1:]] = n
		}
	}
	for _, child := range n.vals {
		if err := c.walk(child); err != nil {
			return err
		}
	}
	return nil
}

// resolve finds the target of a local $ref ("#", "#/json/pointer", "#name").
func (c *checker) resolve(n *node) (*node, error) {
	var ref string
	for i, k := range n.keys {
		if s, ok := n.vals[i].(string); ok && k == "$ref" {
			ref = s // the last one, like encoding/json
		}
	}
	frag, err := url.PathUnescape(ref[1:])
	if err != nil {
		return nil, unchecked("inputSchema has a bad $ref %q", shorten(ref))
	}
	var cur any = c.root
	switch {
	case frag == "":
	case strings.HasPrefix(frag, "/"):
		for _, tok := range strings.Split(frag[1:], "/") {
			tok = strings.NewReplacer("~1", "/", "~0", "~").Replace(tok)
			cur = child(cur, tok)
		}
	default:
		cur = c.anchors[frag]
	}
	t, ok := cur.(*node)
	if !ok || t.keys == nil {
		return nil, unchecked("inputSchema has a $ref %q that points to no subschema in it", shorten(ref))
	}
	return t, nil
}

func child(v any, tok string) any {
	n, ok := v.(*node)
	if !ok {
		return nil
	}
	if n.keys == nil {
		i, err := strconv.Atoi(tok)
		if err != nil || i < 0 || i >= len(n.vals) {
			return nil
		}
		return n.vals[i]
	}
	for i, k := range n.keys {
		if k == tok {
			return n.vals[i]
		}
	}
	return nil
}

// expand counts the objects reachable from v with every $ref replaced by
// its target, memoized per object and stopping at MaxSchemaNodes. A $ref
// cycle is refused: through one, a value nested d deep can be checked
// against a subschema 2^d times.
func (c *checker) expand(v any) (int, error) {
	n, ok := v.(*node)
	if !ok {
		return 0, nil
	}
	if m, ok := c.memo[n]; ok {
		return m, nil
	}
	if c.active[n] {
		return 0, unchecked("inputSchema refers to itself through $ref (a recursive schema)")
	}
	c.active[n] = true
	total := 1
	add := func(m int) {
		total += m
		if total > MaxSchemaNodes {
			total = MaxSchemaNodes + 1
		}
	}
	for _, child := range n.vals {
		m, err := c.expand(child)
		if err != nil {
			return 0, err
		}
		add(m)
	}
	if n.ref != nil {
		m, err := c.expand(n.ref)
		if err != nil {
			return 0, err
		}
		add(m)
	}
	delete(c.active, n)
	c.memo[n] = total
	return total, nil
}

func shorten(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// saneNumber reports whether a JSON number is short and its exponent small.
// The schema library computes with exact rationals, and 1e-99999999 is a
// 100-million-digit one (it also crashes the library in places).
func saneNumber(n string) bool {
	if len(n) > 64 {
		return false
	}
	i := strings.IndexAny(n, "eE")
	if i < 0 {
		return true
	}
	exp, err := strconv.Atoi(strings.TrimPrefix(n[i+1:], "+"))
	return err == nil && exp >= -400 && exp <= 400
}
