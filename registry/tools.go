package registry

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"

	"github.com/xiaozhi-hub/hub"
)

// toolset is one tool list, shared by every device whose list has the same
// content (devices on the same firmware usually do).
type toolset struct {
	hash   string
	tools  []hub.Tool
	byName map[string]int
	refs   int
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

func canonical(t hub.Tool) hub.Tool {
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

// internLocked returns the shared toolset for hash, creating it from tools,
// and takes a reference to it. r.mu must be held for writing.
func (r *Registry) internLocked(hash string, tools []hub.Tool) *toolset {
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

// releaseLocked drops a reference taken by internLocked.
func (r *Registry) releaseLocked(ts *toolset) {
	if ts == nil {
		return
	}
	ts.refs--
	if ts.refs <= 0 {
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
