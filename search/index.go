// Package search finds devices from what people call them: "客厅的灯",
// "living room lamp", "the speaker in the study". It matches device names,
// rooms, aliases, and the descriptions of their tools and IoT things, for
// Chinese written without spaces (by character units) and for English (by
// words), with a small synonym table (灯 ↔ light/lamp, 音箱 ↔ speaker, 卧室 ⊃
// 主卧, …). Results are ranked by score, ties broken by device id, and each
// says why it matched.
package search

import (
	"cmp"
	"slices"
	"strings"
	"sync"

	"github.com/xiaozhi-hub/hub"
)

// Doc is what the index knows about one device.
type Doc struct {
	ID      string
	Name    string
	Room    string
	Aliases []string
	Board   string
	Tools   []hub.Tool
	Things  []hub.Thing
}

// Result is one device found, best first.
type Result struct {
	ID    string   `json:"device_id"`
	Score float64  `json:"score"`
	Why   []string `json:"matched"`
}

// Index is a searchable set of devices. It is safe for concurrent use.
type Index struct {
	dict *dictionary

	mu       sync.RWMutex
	docs     map[string]*doc
	postings map[string]map[string]struct{} // unit or "\x01"+concept → doc ids
	vocab    map[string]int                 // unit keys of names, aliases and rooms → refs
	maxVocab int
}

// NewIndex returns an empty index.
func NewIndex() *Index {
	return &Index{
		dict:     newDictionary(),
		docs:     map[string]*doc{},
		postings: map[string]map[string]struct{}{},
		vocab:    map[string]int{},
	}
}

type field struct {
	label string   // for explanations: `name "吸顶灯"`, `tool self.lamp.turn_on`
	units []string // tokenized text
}

// doc is a Doc prepared for matching.
type doc struct {
	src         Doc
	fingerprint string
	names       []field // name and aliases
	room        field
	caps        []field // tool and thing names and descriptions, board
	concepts    map[string]source
	keys        []string // postings keys, for removal
	vocab       []string // vocab keys, for removal
}

// source says where a doc's concept came from; lower class is stronger.
type source struct {
	class int // classIdentity, classRoom or classCapability
	field string
	term  string
	broad bool
}

const (
	classIdentity = iota
	classRoom
	classCapability
)

// Put adds or replaces a device. fingerprint is any string that changes
// when the device's searchable data changes; see Fingerprint.
func (x *Index) Put(d Doc, fingerprint string) {
	p := x.prepare(d)
	p.fingerprint = fingerprint
	x.mu.Lock()
	defer x.mu.Unlock()
	x.removeLocked(d.ID)
	x.docs[d.ID] = p
	for _, k := range p.keys {
		set := x.postings[k]
		if set == nil {
			set = map[string]struct{}{}
			x.postings[k] = set
		}
		set[d.ID] = struct{}{}
	}
	for _, v := range p.vocab {
		x.vocab[v]++
		x.maxVocab = max(x.maxVocab, strings.Count(v, "\x00")+1)
	}
}

// Fingerprint returns the fingerprint a device was put with, or "".
func (x *Index) Fingerprint(id string) string {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if p, ok := x.docs[id]; ok {
		return p.fingerprint
	}
	return ""
}

// Remove forgets a device.
func (x *Index) Remove(id string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.removeLocked(id)
}

// Retain removes every device for which keep returns false.
func (x *Index) Retain(keep func(id string) bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for id := range x.docs {
		if !keep(id) {
			x.removeLocked(id)
		}
	}
}

// Len returns the number of devices in the index.
func (x *Index) Len() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return len(x.docs)
}

func (x *Index) removeLocked(id string) {
	p, ok := x.docs[id]
	if !ok {
		return
	}
	delete(x.docs, id)
	for _, k := range p.keys {
		if set := x.postings[k]; set != nil {
			delete(set, id)
			if len(set) == 0 {
				delete(x.postings, k)
			}
		}
	}
	for _, v := range p.vocab {
		if x.vocab[v]--; x.vocab[v] <= 0 {
			delete(x.vocab, v)
		}
	}
}

func (x *Index) prepare(d Doc) *doc {
	p := &doc{src: d, concepts: map[string]source{}}
	addName := func(s string) {
		if u := tokenize(s); len(u) > 0 {
			p.names = append(p.names, field{label: "name " + quote(s), units: u})
		}
	}
	addName(d.Name)
	for _, a := range d.Aliases {
		if u := tokenize(a); len(u) > 0 {
			p.names = append(p.names, field{label: "alias " + quote(a), units: u})
		}
	}
	p.room = field{label: "room " + quote(d.Room), units: tokenize(d.Room)}
	addCap := func(label, text string) {
		if u := tokenize(text); len(u) > 0 {
			p.caps = append(p.caps, field{label: label, units: u})
		}
	}
	for _, t := range d.Tools {
		label := "tool " + t.Name
		addCap(label, t.Name)
		addCap(label, t.Description)
	}
	for _, t := range d.Things {
		label := "thing " + t.Name
		addCap(label, t.Name)
		addCap(label, t.Description)
		for name, m := range t.Methods {
			addCap(label, name)
			addCap(label, m.Description)
		}
		for name, pr := range t.Properties {
			addCap(label, name)
			addCap(label, pr.Description)
		}
	}
	if d.Board != "" {
		addCap("board "+quote(d.Board), d.Board)
	}
	slices.SortFunc(p.caps, func(a, b field) int { return strings.Compare(a.label, b.label) })

	note := func(class int, f field) {
		for _, fd := range x.dict.conceptsIn(f.units) {
			old, ok := p.concepts[fd.concept.id]
			if !ok || class < old.class || (class == old.class && old.broad && !fd.broad) {
				p.concepts[fd.concept.id] = source{class: class, field: f.label, term: fd.term, broad: fd.broad}
			}
		}
	}
	for _, f := range p.names {
		note(classIdentity, f)
	}
	note(classRoom, p.room)
	for _, f := range p.caps {
		note(classCapability, f)
	}

	keys := map[string]struct{}{}
	for _, f := range append(append(slices.Clone(p.names), p.room), p.caps...) {
		for _, u := range f.units {
			keys[u] = struct{}{}
		}
	}
	for c := range p.concepts {
		keys["\x01"+c] = struct{}{}
	}
	for k := range keys {
		p.keys = append(p.keys, k)
	}
	for _, f := range append(slices.Clone(p.names), p.room) {
		if len(f.units) > 0 {
			p.vocab = append(p.vocab, key(f.units))
		}
	}
	return p
}

// Search returns at most limit devices matching query, best first.
func (x *Index) Search(query string, limit int) []Result { return x.SearchWhere(query, limit, nil) }

// SearchWhere is Search among the devices keep accepts (nil: all), so that
// a person's search is not cut short by devices they do not see.
func (x *Index) SearchWhere(query string, limit int, keep func(id string) bool) []Result {
	if limit <= 0 {
		limit = 5
	}
	if keep == nil {
		keep = func(string) bool { return true }
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	if id := strings.TrimSpace(query); x.docs[id] != nil && keep(id) { // a device id
		return []Result{{ID: id, Score: 100, Why: []string{"device id matches"}}}
	}
	terms := x.parse(tokenize(query))
	if len(terms) == 0 {
		return []Result{}
	}
	cands := map[string]struct{}{}
	for _, t := range terms {
		for _, u := range t.units {
			for id := range x.postings[u] {
				cands[id] = struct{}{}
			}
		}
		for _, c := range t.concepts {
			for id := range x.postings["\x01"+c.concept.id] {
				cands[id] = struct{}{}
			}
		}
	}
	out := make([]Result, 0, len(cands))
	for id := range cands {
		if !keep(id) {
			continue
		}
		if r, ok := score(x.docs[id], terms); ok {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b Result) int {
		return cmp.Or(cmp.Compare(b.Score, a.Score), strings.Compare(a.ID, b.ID))
	})
	if len(out) > limit {
		out = out[:limit]
	}
	return out
}

func quote(s string) string { return "\"" + s + "\"" }
