package search

import (
	"math"
	"slices"
)

// qterm is one meaningful piece of a query: a synonym-table term (with its
// concepts, and those answering the needs it names), a device name or room
// known to the index, or a run of other text.
type qterm struct {
	units    []string
	text     string // units, displayed
	cjk      bool   // it starts with a CJK character
	single   bool   // it is one CJK character: weak evidence
	target   bool   // it names a kind of device or a need: what is wanted, not where
	concepts []found
}

// Weights. A query usually names a room and a kind of device ("客厅的灯");
// the device that matches both must win over one that matches either, and a
// device named exactly as asked wins over everything. A need ("好热",
// "地上好脏") counts a little less than naming the kind of device itself,
// so the room of the request ("主卧太干了") decides between two devices
// that both answer it.
const (
	wNameExact   = 12.0
	wRoomExact   = 9.0
	wNamePart    = 6.0
	wRoomPart    = 5.0
	wNameFuzzy   = 4.0
	wConceptName = 7.0
	wConceptRoom = 9.0
	wConceptCap  = 3.0
	wCapText     = 1.5
	wNeedName    = 6.0 // the device's name or alias says it answers the need
	wNeedCap     = 2.5 // one of its tools or things does
	// Each later answer of a need counts this much less than the one
	// before (空调 before 风扇 for "好热"), down to needRankFloor.
	needRankStep  = 0.1
	needRankFloor = 0.7
	// A broader meaning of the query's term (亮度 may be about a light), or
	// a concept that may also help with a need, is weak evidence; a broader
	// meaning on the device's side (its room 主卧 is a bedroom) is nearly
	// as good as the term itself.
	queryBroad = 0.4
	docBroad   = 0.7
	// The share of its room's score a device loses when the query names
	// what is wanted and the device is not it.
	roomOnlyCut = 0.5
)

// parse splits query units into terms: at each position the longest known
// term (synonym, need, stop word, or a name or room from the index) wins;
// units that start no known term are gathered into runs.
func (x *Index) parse(units []string) []qterm {
	var terms []qterm
	var run []string
	add := func(t qterm) {
		t.text = display(t.units)
		t.cjk = isCJKUnit(t.units[0])
		t.single = t.cjk && len(t.units) == 1
		for _, fd := range t.concepts {
			t.target = t.target || (!fd.broad && (fd.need != nil || fd.concept.kind == "type"))
		}
		terms = append(terms, t)
	}
	flush := func() {
		// A run of CJK characters is one term; ASCII words stand alone.
		var cjk []string
		for _, u := range run {
			if isCJKUnit(u) {
				cjk = append(cjk, u)
				continue
			}
			if len(cjk) > 0 {
				add(qterm{units: cjk})
				cjk = nil
			}
			add(qterm{units: []string{u}})
		}
		if len(cjk) > 0 {
			add(qterm{units: cjk})
		}
		run = nil
	}
	for i := 0; i < len(units); {
		e := x.dict.longest(units, i)
		n := 0
		if e != nil {
			n = len(e.units)
		}
		if v := x.vocabLongest(units, i); v > n {
			flush()
			t := qterm{units: units[i : i+v]}
			t.concepts = x.dict.conceptsIn(t.units, true)
			add(t)
			i += v
			continue
		}
		if e == nil {
			run = append(run, units[i])
			i++
			continue
		}
		flush()
		if !e.stop {
			add(qterm{units: e.units, concepts: e.meanings(nil, true)})
		}
		i += n
	}
	flush()
	return terms
}

func (x *Index) vocabLongest(units []string, i int) int {
	for n := min(x.maxVocab, len(units)-i); n > 0; n-- {
		if x.vocab[key(units[i:i+n])] > 0 {
			return n
		}
	}
	return 0
}

// score sums, over the query's terms, the best match of each term in the
// device's fields, appending why each term matched to why. When the query
// names what is wanted (a kind of device or a need) and the device matches
// only where (the room), the room counts for less: in "主卧太干了" the
// humidifier of another room ranks above the master bedroom's lamp.
func score(p *doc, terms []qterm, why []reason) (float64, []reason) {
	var total, room float64
	wanted, found := false, false
	for i := range terms {
		t := &terms[i]
		wanted = wanted || t.target
		s, r := scoreTerm(p, t)
		if s <= 0 {
			continue
		}
		total += s
		why = append(why, r)
		if r.room {
			room += s
		} else if t.target {
			found = true
		}
	}
	if wanted && !found {
		total -= room * roomOnlyCut
	}
	return math.Round(total*100) / 100, why
}

func scoreTerm(p *doc, t *qterm) (best float64, why reason) {
	single := t.single
	for i := range p.names {
		f := &p.names[i]
		switch {
		case slices.Equal(f.units, t.units):
			if wNameExact > best {
				best, why = wNameExact, reason{how: howMatches, field: f.label, text: t.text}
			}
		case contains(f.units, t.units):
			w := wNamePart
			if single {
				w /= 2
			}
			if s := w * coverage(t.units, f.units); s > best {
				best, why = s, reason{how: howContains, field: f.label, text: t.text}
			}
		case len(t.units) >= 2 && t.cjk:
			if n := longestCommon(f.units, t.units); n >= 2 {
				if s := wNameFuzzy * float64(n) / float64(len(t.units)); s > best {
					best, why = s, reason{how: howResembles, field: f.label, text: t.text}
				}
			}
		}
	}
	if room := &p.room; len(room.units) > 0 {
		switch {
		case slices.Equal(room.units, t.units):
			if wRoomExact > best {
				best, why = wRoomExact, reason{how: howMatches, field: room.label, text: t.text, room: true}
			}
		case contains(room.units, t.units) && !single:
			if s := wRoomPart * coverage(t.units, room.units); s > best {
				best, why = s, reason{how: howContains, field: room.label, text: t.text, room: true}
			}
		}
	}
	for i := range t.concepts {
		fd := &t.concepts[i]
		if n := fd.concept.n; p.hasConcept[n/64]&(1<<(n%64)) == 0 {
			continue
		}
		src, ok := p.concept(fd.concept.id)
		if !ok {
			continue
		}
		w := conceptWeight(fd, src)
		if w > best {
			best, why = w, reason{how: howSays, field: src.field, text: t.text, term: src.term, concept: fd.concept.id,
				room: fd.concept.kind == "room"}
			if fd.need != nil {
				why.how, why.need = howAnswers, fd.need.id
			}
		}
	}
	if !single && (len(t.units) > 1 || len(t.units[0]) >= 3) && wCapText > best && p.hasCapUnits(t.units) {
		for i := range p.cap.fields {
			if f := &p.cap.fields[i]; contains(f.units, t.units) {
				best, why = wCapText, reason{how: howMentions, field: f.label, text: t.text}
				break
			}
		}
	}
	return best, why
}

// conceptWeight is what a concept of the query, found in the device's src,
// is worth.
func conceptWeight(fd *found, src source) float64 {
	var w float64
	switch {
	case fd.need != nil && src.class == classIdentity:
		w = wNeedName
	case fd.need != nil && src.class == classCapability:
		w = wNeedCap
	case fd.need != nil: // a room answers no need
		return 0
	case src.class == classIdentity:
		w = wConceptName
	case src.class == classRoom:
		w = wConceptRoom
	default:
		w = wConceptCap
	}
	if fd.need != nil && !fd.broad {
		w *= max(needRankFloor, 1-needRankStep*float64(fd.rank))
	}
	if fd.broad {
		w *= queryBroad
	}
	if src.broad {
		w *= docBroad
	}
	return w
}

// sourceWeight is what a concept found in a device's field of class is
// worth to a query naming it: a device keeps, of the fields naming one
// concept, the one worth most (主卧窗帘 in room 主卧 is a bedroom by its
// room more than by its name).
func sourceWeight(class int, broad bool) float64 {
	w := wConceptCap
	switch class {
	case classIdentity:
		w = wConceptName
	case classRoom:
		w = wConceptRoom
	}
	if broad {
		w *= docBroad
	}
	return w
}

// coverage is between 0.5 and 1: how much of the field the term covers.
func coverage(term, field []string) float64 {
	return 0.5 + 0.5*float64(len(term))/float64(len(field))
}

// reason is why one query term matched a device; it is put into words only
// for the results returned.
type reason struct {
	how     int
	field   string // the device's field: `name "吸顶灯"`, `tool self.lamp.turn_on`
	text    string // the query's term
	term    string // the synonym-table term found in the field
	concept string
	need    string
	room    bool // the term matched where the device is
}

const (
	howMatches = iota
	howContains
	howResembles
	howSays
	howAnswers
	howMentions
)

func (r reason) String() string {
	q := quote(r.text)
	switch r.how {
	case howMatches:
		return r.field + " matches " + q
	case howContains:
		return r.field + " contains " + q
	case howResembles:
		return r.field + " resembles " + q
	case howSays:
		return r.field + " says " + quote(r.term) + ", like " + q + " (" + r.concept + ")"
	case howAnswers:
		return r.field + " says " + quote(r.term) + " (" + r.concept + "), which answers " + q + " (" + r.need + ")"
	default:
		return r.field + " mentions " + q
	}
}
