package search

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// A text is searched as a sequence of units: an ASCII word (lower-cased,
// lightly stemmed) or a single CJK character. Chinese is written without
// spaces, so matching on character units finds "客厅" inside "客厅的灯" and
// "灯" inside "吸顶灯" without a word segmenter.

// tokenize splits s into units. Digits and punctuation separate units and
// are dropped; tool-name separators (". _ -") separate words.
func tokenize(s string) []string {
	var units []string
	var word strings.Builder
	flush := func() {
		if word.Len() > 0 {
			units = append(units, stem(word.String()))
			word.Reset()
		}
	}
	for _, r := range s {
		r = fold(r)
		switch {
		case r < utf8.RuneSelf && (r >= 'a' && r <= 'z'):
			word.WriteRune(r)
		case isCJK(r):
			flush()
			units = append(units, string(r))
		case unicode.IsLetter(r):
			// Other scripts: keep letters inside words.
			word.WriteRune(unicode.ToLower(r))
		default:
			flush()
		}
	}
	flush()
	return units
}

// fold maps full-width ASCII to ASCII and upper case to lower case.
func fold(r rune) rune {
	if r >= 0xFF01 && r <= 0xFF5E {
		r -= 0xFEE0
	}
	if r >= 'A' && r <= 'Z' {
		r += 'a' - 'A'
	}
	return r
}

func isCJK(r rune) bool {
	return unicode.Is(unicode.Han, r) || unicode.Is(unicode.Hiragana, r) ||
		unicode.Is(unicode.Katakana, r) || unicode.Is(unicode.Hangul, r)
}

// stem removes an English plural "s" so that "lights" matches "light".
func stem(w string) string {
	switch {
	case len(w) > 4 && strings.HasSuffix(w, "ies"):
		return w[:len(w)-3] + "y"
	case len(w) > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss"):
		return w[:len(w)-1]
	}
	return w
}

// key joins units into a map key.
func key(units []string) string { return strings.Join(units, "\x00") }

// display joins units for people: CJK characters without spaces, words with.
func display(units []string) string {
	var b strings.Builder
	for i, u := range units {
		if i > 0 && !(isCJKUnit(u) && isCJKUnit(units[i-1])) {
			b.WriteByte(' ')
		}
		b.WriteString(u)
	}
	return b.String()
}

func isCJKUnit(u string) bool {
	r, _ := utf8.DecodeRuneInString(u)
	return isCJK(r)
}

// contains reports whether needle occurs in hay as a contiguous run of units.
func contains(hay, needle []string) bool { return indexOf(hay, needle) >= 0 }

func indexOf(hay, needle []string) int {
	if len(needle) == 0 || len(needle) > len(hay) {
		return -1
	}
outer:
	for i := 0; i+len(needle) <= len(hay); i++ {
		for j, u := range needle {
			if hay[i+j] != u {
				continue outer
			}
		}
		return i
	}
	return -1
}

// longestCommon returns the length, in units, of the longest run that a and
// b share.
func longestCommon(a, b []string) int {
	best := 0
	for i := range a {
		for j := range b {
			n := 0
			for i+n < len(a) && j+n < len(b) && a[i+n] == b[j+n] {
				n++
			}
			best = max(best, n)
		}
	}
	return best
}
