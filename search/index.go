// Package search finds devices from what people call them: "客厅的灯",
// "living room lamp", "the speaker in the study". It matches device names,
// rooms, aliases, and the descriptions of their tools and IoT things, for
// Chinese written without spaces (by character units) and for English (by
// words), with a small synonym table (灯 ↔ light/lamp, 音箱 ↔ speaker, 卧室 ⊃
// 主卧, …). It also finds them by what they do for what people say they
// need ("地上好脏" → the robot vacuum, "主卧太干了" → the master bedroom's
// humidifier; needs.go). Results are ranked by score, ties broken by device
// id, and each says why it matched. docs/search.md describes the ranking.
// A Doc may as well be a service: its tools are matched the same way.
package search

import (
	"crypto/sha256"
	"encoding/binary"
	"io"
	"math/bits"
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
	slots    []*doc             // by doc slot; nil where free
	free     []int32            // free slots
	postings map[string][]int32 // unit or "\x01"+concept → doc slots
	caps     map[[sha256.Size]byte]*capSet
	vocab    map[string]int // unit keys of names, aliases and rooms → refs
	maxVocab int
}

// theDictionary is built once and shared by every index: nothing changes
// it once built, and each copy was about 0.7 MB of heap (a hub has an
// index in its agent and one in its MCP server).
var theDictionary = sync.OnceValue(newDictionary)

// NewIndex returns an empty index.
func NewIndex() *Index {
	return &Index{
		dict:     theDictionary(),
		docs:     map[string]*doc{},
		postings: map[string][]int32{},
		vocab:    map[string]int{},
		caps:     map[[sha256.Size]byte]*capSet{},
	}
}

type field struct {
	label string   // for explanations: `name "吸顶灯"`, `tool self.lamp.turn_on`
	units []string // tokenized text
}

// doc is a Doc prepared for matching.
type doc struct {
	id          string
	fingerprint string
	names       []field // name and aliases
	room        field
	cap         *capSet      // what its tools, things and board say: shared
	concepts    []ownConcept // the concepts its names and room name, a few
	hasConcept  []uint64     // bit n: conceptTable[n] is in concepts or cap's
	keys        []string     // postings keys beside cap.keys, for removal
	slot        int32        // its place in Index.slots
	vocab       []string     // vocab keys, for removal
}

// capSet is the part of a doc made from a device's tools, things and
// board: the same for every device of one model and firmware. An index
// prepares it once per content and its docs share it, read only: it was
// most of a doc's memory (BENCHMARKS.md, "A catalog's memory per
// device").
type capSet struct {
	digest   [sha256.Size]byte   // of the content it was made from: its key in Index.caps
	fields   []field             // by label
	units    map[string]struct{} // every unit of fields
	concepts map[string]source   // the best source of each concept the fields name
	bits     []uint64            // bit n: conceptTable[n] is in concepts
	keys     []string            // postings keys: the units and concepts
	refs     int                 // docs sharing it; guarded by Index.mu
}

// ownConcept is a concept named by a doc's names or room.
type ownConcept struct {
	id  string
	src source
}

// concept returns where the doc's concept id came from: its names or
// room, or its capabilities when they say it more strongly (the
// capabilities are noted last, and replace only a weaker source).
func (p *doc) concept(id string) (source, bool) {
	var own source
	ok := false
	for _, c := range p.concepts {
		if c.id == id {
			own, ok = c.src, true
			break
		}
	}
	c, capOK := p.cap.concepts[id]
	if ok && (!capOK || sourceWeight(c.class, c.broad) <= sourceWeight(own.class, own.broad)) {
		return own, true
	}
	return c, capOK
}

// source says where a doc's concept came from; lower class is stronger.
type source struct {
	class int // classIdentity, classRoom or classCapability
	field string
	term  string
	broad bool
	n     int // the concept's place in conceptTable
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
	if c := x.caps[p.cap.digest]; c != nil {
		p.cap = c
	} else {
		x.caps[p.cap.digest] = p.cap
	}
	p.cap.refs++
	if n := len(x.free); n > 0 {
		p.slot, x.free = x.free[n-1], x.free[:n-1]
		x.slots[p.slot] = p
	} else {
		p.slot = int32(len(x.slots))
		x.slots = append(x.slots, p)
	}
	for _, k := range p.keys {
		x.postings[k] = append(x.postings[k], p.slot)
	}
	for _, k := range p.cap.keys {
		x.postings[k] = append(x.postings[k], p.slot)
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
	x.slots[p.slot] = nil
	x.free = append(x.free, p.slot)
	for _, keys := range [][]string{p.keys, p.cap.keys} {
		for _, k := range keys {
			list := x.postings[k]
			if i := slices.Index(list, p.slot); i >= 0 {
				list[i] = list[len(list)-1]
				list = list[:len(list)-1]
			}
			if len(list) == 0 {
				delete(x.postings, k)
			} else {
				x.postings[k] = list
			}
		}
	}
	if p.cap.refs--; p.cap.refs <= 0 && x.caps[p.cap.digest] == p.cap {
		delete(x.caps, p.cap.digest)
	}
	for _, v := range p.vocab {
		if x.vocab[v]--; x.vocab[v] <= 0 {
			delete(x.vocab, v)
		}
	}
}

func (x *Index) prepare(d Doc) *doc {
	p := &doc{id: d.ID}
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
	p.cap = x.capSetOf(d)

	concepts := map[string]source{}
	for _, f := range p.names {
		x.note(concepts, classIdentity, f)
	}
	x.note(concepts, classRoom, p.room)
	p.hasConcept = slices.Clone(p.cap.bits)
	keys := map[string]struct{}{}
	identity := append(slices.Clone(p.names), p.room) // the fields of its own
	for _, f := range identity {
		if len(f.units) > 0 {
			p.vocab = append(p.vocab, key(f.units))
		}
		for _, u := range f.units {
			if _, shared := p.cap.units[u]; !shared {
				keys[u] = struct{}{}
			}
		}
	}
	for id, src := range concepts {
		p.concepts = append(p.concepts, ownConcept{id, src})
		p.hasConcept[src.n/64] |= 1 << (src.n % 64)
		if _, shared := p.cap.concepts[id]; !shared {
			keys["\x01"+id] = struct{}{}
		}
	}
	for k := range keys {
		p.keys = append(p.keys, k)
	}
	return p
}

// note records in concepts the concepts f names, each from its strongest
// source (the first of equal ones).
func (x *Index) note(concepts map[string]source, class int, f field) {
	for _, fd := range x.dict.conceptsIn(f.units, false) {
		old, ok := concepts[fd.concept.id]
		if !ok || sourceWeight(class, fd.broad) > sourceWeight(old.class, old.broad) {
			concepts[fd.concept.id] = source{class: class, field: f.label, term: fd.term, broad: fd.broad, n: fd.concept.n}
		}
	}
}

// capSetOf returns the capabilities of d: the index's set of the same
// content when it has one, else a new one (Put keeps it).
func (x *Index) capSetOf(d Doc) *capSet {
	type capText struct{ label, text string }
	var texts []capText
	add := func(label, text string) {
		if strings.TrimSpace(text) != "" {
			texts = append(texts, capText{label, text})
		}
	}
	for _, t := range d.Tools {
		label := "tool " + t.Name
		add(label, t.Name)
		add(label, t.Description)
	}
	for _, t := range d.Things {
		label := "thing " + t.Name
		add(label, t.Name)
		add(label, t.Description)
		for name, m := range t.Methods {
			add(label, name)
			add(label, m.Description)
		}
		for name, pr := range t.Properties {
			add(label, name)
			add(label, pr.Description)
		}
	}
	if d.Board != "" {
		add("board "+quote(d.Board), d.Board)
	}
	// Fields by label, each label's in the order above; the digest is of
	// the same texts in an order that does not depend on the maps'.
	slices.SortStableFunc(texts, func(a, b capText) int { return strings.Compare(a.label, b.label) })
	canonical := slices.Clone(texts)
	slices.SortFunc(canonical, func(a, b capText) int {
		if c := strings.Compare(a.label, b.label); c != 0 {
			return c
		}
		return strings.Compare(a.text, b.text)
	})
	h := sha256.New()
	var n [8]byte
	for _, t := range canonical {
		for _, s := range []string{t.label, t.text} {
			binary.LittleEndian.PutUint64(n[:], uint64(len(s)))
			h.Write(n[:])
			io.WriteString(h, s)
		}
	}
	var digest [sha256.Size]byte
	h.Sum(digest[:0])
	x.mu.RLock()
	c := x.caps[digest]
	x.mu.RUnlock()
	if c != nil {
		return c
	}

	c = &capSet{digest: digest, units: map[string]struct{}{}, concepts: map[string]source{},
		bits: make([]uint64, (len(conceptTable)+63)/64)}
	for _, t := range texts {
		if u := tokenize(t.text); len(u) > 0 {
			c.fields = append(c.fields, field{label: t.label, units: u})
		}
	}
	for _, f := range c.fields {
		x.note(c.concepts, classCapability, f)
		for _, u := range f.units {
			if _, ok := c.units[u]; !ok {
				c.units[u] = struct{}{}
				c.keys = append(c.keys, u)
			}
		}
	}
	for id, s := range c.concepts {
		c.bits[s.n/64] |= 1 << (s.n % 64)
		c.keys = append(c.keys, "\x01"+id)
	}
	return c
}

// hasCapUnits reports whether every unit of units occurs in the doc's
// tools, things or board: a cheap test before looking for the run.
func (p *doc) hasCapUnits(units []string) bool {
	for _, u := range units {
		if _, ok := p.cap.units[u]; !ok {
			return false
		}
	}
	return true
}

// maxQueryUnits bounds the work of one search: a request to a voice
// assistant is a sentence, and the rest of a longer query is ignored.
const maxQueryUnits = 64

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
	// limit comes from a model: any int.
	limit = min(limit, len(x.docs))
	if id := strings.TrimSpace(query); x.docs[id] != nil && keep(id) { // a device id
		return []Result{{ID: id, Score: 100, Why: []string{"device id matches"}}}
	}
	units := tokenize(query)
	terms := x.parse(units[:min(len(units), maxQueryUnits)])
	if len(terms) == 0 {
		return []Result{}
	}
	// Candidates: the devices sharing a unit or a concept with the query.
	cands := make([]uint64, (len(x.slots)+63)/64)
	mark := func(list []int32) {
		for _, s := range list {
			cands[s/64] |= 1 << (s % 64)
		}
	}
	for _, t := range terms {
		for _, u := range t.units {
			mark(x.postings[u])
		}
		for _, c := range t.concepts {
			mark(x.postings["\x01"+c.concept.id])
		}
	}
	// Score every candidate, keeping the best limit (and why, put into
	// words only for them).
	top := make([]hit, 0, limit+1)
	var scratch []reason
	for w, set := range cands {
		for ; set != 0; set &= set - 1 {
			p := x.slots[w*64+bits.TrailingZeros64(set)]
			if !keep(p.id) {
				continue
			}
			var s float64
			s, scratch = score(p, terms, scratch[:0])
			if s <= 0 || (len(top) == limit && !better(s, p, top[limit-1])) {
				continue
			}
			i, _ := slices.BinarySearchFunc(top, hit{p: p, score: s}, func(a, b hit) int {
				if better(a.score, a.p, b) {
					return -1
				}
				return 1
			})
			top = slices.Insert(top, i, hit{p: p, score: s, why: slices.Clone(scratch)})
			if len(top) > limit {
				top = top[:limit]
			}
		}
	}
	out := make([]Result, 0, len(top))
	for _, h := range top {
		r := Result{ID: h.p.id, Score: h.score, Why: make([]string, 0, len(h.why))}
		for _, w := range h.why {
			r.Why = append(r.Why, w.String())
		}
		out = append(out, r)
	}
	return out
}

// hit is a device found and why.
type hit struct {
	p     *doc
	score float64
	why   []reason
}

// better reports whether a device p of score s ranks before h: by score,
// then by id.
func better(s float64, p *doc, h hit) bool {
	return s > h.score || (s == h.score && p.id < h.p.id)
}
func quote(s string) string { return "\"" + s + "\"" }
