package voice

import (
	"strings"
	"unicode/utf8"
)

// splitter cuts a streamed answer into sentences as it arrives, so that
// speech synthesis can start at the first sentence while the model goes
// on: at 。！？；!?; and line breaks, at ". " (not inside numbers such as
// 3.5), and at a comma once a sentence has grown long. Markdown marks the
// model may write are dropped: they would be read aloud.
type splitter struct {
	buf strings.Builder
}

const longSentence = 60 // runes after which a comma ends a sentence

// push adds a delta and returns the sentences it completed.
func (s *splitter) push(delta string) []string {
	var out []string
	for _, r := range delta {
		switch r {
		case '*', '#', '`', '_':
			continue
		}
		s.buf.WriteRune(r)
		if end(r) || r == ' ' && strings.HasSuffix(strings.TrimSuffix(s.buf.String(), " "), ".") ||
			(r == '，' || r == ',') && utf8.RuneCountInString(s.buf.String()) >= longSentence {
			if t := strings.TrimSpace(s.buf.String()); t != "" {
				out = append(out, t)
			}
			s.buf.Reset()
		}
	}
	return out
}

// flush returns what is left once the answer is complete.
func (s *splitter) flush() string {
	t := strings.TrimSpace(s.buf.String())
	s.buf.Reset()
	return t
}

func end(r rune) bool {
	switch r {
	case '。', '！', '？', '；', '!', '?', ';', '\n', '…':
		return true
	}
	return false
}
