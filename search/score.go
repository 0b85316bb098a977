package search

import (
	"math"
	"slices"
)

// qterm is one meaningful piece of a query: a synonym-table term (with its
// concepts), a device name or room known to the index, or a run of other
// text.
type qterm struct {
	units    []string
	concepts []found
}

// Weights. A query usually names a room and a kind of device ("客厅的灯");
// the device that matches both must win over one that matches either, and a
// device named exactly as asked wins over everything.
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
	// A broader meaning of the query's term (亮度 may be about a light) is
	// weak evidence; a broader meaning on the device's side (its room 主卧
	// is a bedroom) is nearly as good as the term itself.
	queryBroad = 0.4
	docBroad   = 0.7
)

// parse splits query units into terms: at each position the longest known
// term (synonym, stop word, or a name or room from the index) wins; units
// that start no known term are gathered into runs.
func (x *Index) parse(units []string) []qterm {
	var terms []qterm
	var run []string
	flush := func() {
		// A run of CJK characters is one term; ASCII words stand alone.
		var cjk []string
		for _, u := range run {
			if isCJKUnit(u) {
				cjk = append(cjk, u)
				continue
			}
			if len(cjk) > 0 {
				terms = append(terms, qterm{units: cjk})
				cjk = nil
			}
			terms = append(terms, qterm{units: []string{u}})
		}
		if len(cjk) > 0 {
			terms = append(terms, qterm{units: cjk})
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
			t.concepts = x.dict.conceptsIn(t.units)
			terms = append(terms, t)
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
			t := qterm{units: e.units}
			for j, c := range e.concepts {
				t.concepts = append(t.concepts, found{concept: c, term: display(e.units), broad: j > 0})
			}
			terms = append(terms, t)
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
// device's fields.
func score(p *doc, terms []qterm) (Result, bool) {
	r := Result{ID: p.src.ID, Why: []string{}}
	for _, t := range terms {
		if s, why := scoreTerm(p, t); s > 0 {
			r.Score += s
			r.Why = append(r.Why, why)
		}
	}
	r.Score = math.Round(r.Score*100) / 100
	return r, r.Score > 0
}

func scoreTerm(p *doc, t qterm) (float64, string) {
	var best float64
	var why string
	try := func(s float64, w func() string) {
		if s > best {
			best, why = s, w()
		}
	}
	text := quote(display(t.units))
	single := len(t.units) == 1 && isCJKUnit(t.units[0]) // one Chinese character: weak evidence
	for _, f := range p.names {
		switch {
		case slices.Equal(f.units, t.units):
			try(wNameExact, func() string { return f.label + " matches " + text })
		case contains(f.units, t.units):
			w := wNamePart
			if single {
				w /= 2
			}
			try(w*coverage(t.units, f.units), func() string { return f.label + " contains " + text })
		case len(t.units) >= 2 && isCJKUnit(t.units[0]):
			if n := longestCommon(f.units, t.units); n >= 2 {
				try(wNameFuzzy*float64(n)/float64(len(t.units)), func() string { return f.label + " resembles " + text })
			}
		}
	}
	if room := p.room; len(room.units) > 0 {
		switch {
		case slices.Equal(room.units, t.units):
			try(wRoomExact, func() string { return room.label + " matches " + text })
		case contains(room.units, t.units) && !single:
			try(wRoomPart*coverage(t.units, room.units), func() string { return room.label + " contains " + text })
		}
	}
	for _, fd := range t.concepts {
		src, ok := p.concepts[fd.concept.id]
		if !ok {
			continue
		}
		w := wConceptCap
		switch src.class {
		case classIdentity:
			w = wConceptName
		case classRoom:
			w = wConceptRoom
		}
		if fd.broad {
			w *= queryBroad
		}
		if src.broad {
			w *= docBroad
		}
		try(w, func() string {
			return src.field + " says " + quote(src.term) + ", like " + text + " (" + fd.concept.id + ")"
		})
	}
	if !single && (len(t.units) > 1 || len(t.units[0]) >= 3) {
		for _, f := range p.caps {
			if contains(f.units, t.units) {
				try(wCapText, func() string { return f.label + " mentions " + text })
				break
			}
		}
	}
	return best, why
}

// coverage is between 0.5 and 1: how much of the field the term covers.
func coverage(term, field []string) float64 {
	return 0.5 + 0.5*float64(len(term))/float64(len(field))
}
