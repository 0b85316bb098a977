package registry

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"slices"
	"sync"

	"github.com/xiaozhi-hub/hub"
)

// toolset is one tool list, shared by every device whose list has the same
// content (devices on the same firmware usually do).
type toolset struct {
	hash   string
	tools  []hub.Tool
	byName map[string]int
	refs   int // under Registry.tsMu
}

// HashTools returns the content hash of a tool list: equal lists (same
// tools in the same order, JSON whitespace aside) have equal hashes.
func HashTools(tools []hub.Tool) string {
	h := sha256.New()
	for _, t := range tools {
		b, _ := json.Marshal(canonical(t))
		h.Write(b)
		h.Write([]byte{'\n'})
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// hashMemo remembers HashTools results by a digest of every field of the
// tools. Devices on one firmware report the same list, and encoding each
// tool as JSON is most of what SetTools costs, for every device that
// connects. The digest covers everything HashTools reads, so a hit is the
// answer HashTools would give; lists that differ only in JSON whitespace
// just miss.
type hashMemo struct {
	mu sync.Mutex
	m  map[[sha256.Size]byte]string
}

const hashMemoSize = 1024

func (hm *hashMemo) hash(tools []hub.Tool) string {
	h := sha256.New()
	var n [8]byte
	field := func(b []byte) {
		binary.LittleEndian.PutUint64(n[:], uint64(len(b)))
		h.Write(n[:])
		h.Write(b)
	}
	for _, t := range tools {
		field([]byte(t.Name))
		field([]byte(t.Description))
		field(t.InputSchema)
		field(t.Annotations)
		if t.UserOnly {
			field([]byte{1})
		} else {
			field([]byte{0})
		}
	}
	var key [sha256.Size]byte
	h.Sum(key[:0])
	hm.mu.Lock()
	v, ok := hm.m[key]
	hm.mu.Unlock()
	if ok {
		return v
	}
	v = HashTools(tools)
	hm.mu.Lock()
	if hm.m == nil || len(hm.m) >= hashMemoSize {
		hm.m = map[[sha256.Size]byte]string{}
	}
	hm.m[key] = v
	hm.mu.Unlock()
	return v
}

// prepare marks the tools whose inputSchema the hub does not check (see
// schema.Check: the device wrote it, and some schemas cost minutes of CPU)
// and queues the others for compiling in the background, off the call
// path. Each distinct schema is checked once. It copies tools only to
// change a mark.
func (r *Registry) prepare(tools []hub.Tool) []hub.Tool {
	var out []hub.Tool
	for i, t := range tools {
		mark := ""
		if err := r.val.Prepare(t.InputSchema); err != nil {
			mark = err.Error()
		}
		if mark == t.Unchecked {
			continue
		}
		if out == nil {
			out = slices.Clone(tools)
		}
		out[i].Unchecked = mark
	}
	if out == nil {
		return tools
	}
	return out
}

// canonical is the tool as the device described it: the hub's mark is
// left out of hashes and comparisons.
func canonical(t hub.Tool) hub.Tool {
	t.Unchecked = ""
	t.InputSchema = compact(t.InputSchema)
	t.Annotations = compact(t.Annotations)
	return t
}

func compact(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return raw
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return raw
	}
	return b.Bytes()
}

// intern returns the shared toolset for hash, creating it from tools,
// and takes a reference to it.
func (r *Registry) intern(hash string, tools []hub.Tool) *toolset {
	r.tsMu.Lock()
	defer r.tsMu.Unlock()
	ts, ok := r.toolsets[hash]
	if !ok {
		ts = &toolset{hash: hash, tools: tools, byName: make(map[string]int, len(tools))}
		for i, t := range tools {
			ts.byName[t.Name] = i
		}
		r.toolsets[hash] = ts
	}
	ts.refs++
	return ts
}

// release drops a reference taken by intern.
func (r *Registry) release(ts *toolset) {
	if ts == nil {
		return
	}
	r.tsMu.Lock()
	defer r.tsMu.Unlock()
	ts.refs--
	if ts.refs <= 0 && r.toolsets[ts.hash] == ts {
		delete(r.toolsets, ts.hash)
	}
}

func (ts *toolset) lookup(name string) (hub.Tool, bool) {
	if ts == nil {
		return hub.Tool{}, false
	}
	i, ok := ts.byName[name]
	if !ok {
		return hub.Tool{}, false
	}
	return ts.tools[i], true
}

// diffTools compares two lists by tool name.
func diffTools(old, cur []hub.Tool) hub.ToolChange {
	var c hub.ToolChange
	before := make(map[string]hub.Tool, len(old))
	for _, t := range old {
		before[t.Name] = t
	}
	seen := make(map[string]bool, len(cur))
	for _, t := range cur {
		seen[t.Name] = true
		o, ok := before[t.Name]
		switch {
		case !ok:
			c.Added = append(c.Added, t.Name)
		case !sameTool(o, t):
			c.Changed = append(c.Changed, t.Name)
		}
	}
	for _, t := range old {
		if !seen[t.Name] {
			c.Removed = append(c.Removed, t.Name)
		}
	}
	slices.Sort(c.Added)
	slices.Sort(c.Removed)
	slices.Sort(c.Changed)
	return c
}

func sameTool(a, b hub.Tool) bool {
	x, _ := json.Marshal(canonical(a))
	y, _ := json.Marshal(canonical(b))
	return bytes.Equal(x, y)
}
