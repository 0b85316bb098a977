package voice

import (
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// countingCodec hands out pcmCoders that count how many are held, and
// that fail a test used after their release.
type countingCodec struct {
	t    *testing.T
	mu   sync.Mutex
	held map[*countedCoder]bool
}

const (
	decoder = "decoder"
	encoder = "encoder"
)

type countedCoder struct {
	pcmCoder
	c    *countingCodec
	kind string
}

func (c *countingCodec) take(kind string) *countedCoder {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := &countedCoder{c: c, kind: kind}
	c.held[k] = true
	return k
}

func (c *countingCodec) NewDecoder(int) (Decoder, error)      { return c.take(decoder), nil }
func (c *countingCodec) NewEncoder(int, int) (Encoder, error) { return c.take(encoder), nil }

// holding is how many coders of kind ("" for any) are held.
func (c *countingCodec) holding(kind string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for k := range c.held {
		if kind == "" || k.kind == kind {
			n++
		}
	}
	return n
}

func (k *countedCoder) check() {
	k.c.mu.Lock()
	defer k.c.mu.Unlock()
	if !k.c.held[k] {
		k.c.t.Error("a coder was used after its release: the codec may have given it to another device")
	}
}

func (k *countedCoder) Decode(p []byte) ([]int16, error) { k.check(); return k.pcmCoder.Decode(p) }
func (k *countedCoder) Encode(p []int16) ([]byte, error) { k.check(); return k.pcmCoder.Encode(p) }

func (k *countedCoder) Release() {
	k.c.mu.Lock()
	defer k.c.mu.Unlock()
	if !k.c.held[k] {
		k.c.t.Error("a coder was released twice")
	}
	delete(k.c.held, k)
}

// The Opus coders go back to the codec when the engine is done with them
// (package opus keeps them for the next answer: a coder is hundreds of KB):
// the decoder when the utterance ends, the encoder once the answer is
// encoded; a conversation between turns holds none, and none is used
// after its release.
func TestCodersAreGivenBack(t *testing.T) {
	codec := &countingCodec{t: t, held: map[*countedCoder]bool{}}
	turns := make(chan TurnRecord, 2)
	e := engine(t, Options{Codec: codec, Recognizer: &recognizer{}, Synthesizer: synthesizer{}, Brain: &brain{},
		OnTurn: func(r TurnRecord) { turns <- r }})
	out := newOutput()
	c := e.Open("aa:00:00:00:00:01", "zh", down, out)
	defer c.Close()
	for turn := range 2 {
		c.Listen("start", "manual", "")
		for range 10 {
			c.Audio(speechFrame(500), 0)
		}
		if n := codec.holding(""); n != 1 || codec.holding(decoder) != 1 {
			t.Fatalf("turn %d: %d coders held while the person speaks, want the decoder", turn, n)
		}
		c.Listen("stop", "", "")
		if n := codec.holding(decoder); n != 0 {
			t.Fatalf("turn %d: the decoder is held after listen stop", turn)
		}
		if r := <-turns; r.Outcome != "ok" {
			t.Fatalf("turn %d: %+v", turn, r)
		}
		if n := codec.holding(""); n != 0 {
			t.Fatalf("turn %d: %d coders held after the turn ended", turn, n)
		}
	}
}

// An answer's encoder goes back to the codec once the answer is encoded,
// while the device still has most of it to hear: the answer keeps its
// packets (a few hundred bytes each) for the time they take to play, not
// the encoder (hundreds of KB with gopus), so the encoders a hub holds
// follow the answers being synthesised, not those being played.
func TestEncoderIsGivenBackBeforeTheAnswerIsPlayed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		codec := &countingCodec{t: t, held: map[*countedCoder]bool{}}
		var recs records
		e := New(Options{Codec: codec, Recognizer: &recognizer{}, Synthesizer: synthesizer{}, Brain: &brain{}, OnTurn: recs.add})
		defer e.Close()
		out := newOutput()
		c := e.Open("aa:00:00:00:00:02", "zh", down, out)
		defer c.Close()
		c.Listen("start", "manual", "")
		for range 10 {
			c.Audio(speechFrame(500), 0)
		}
		c.Listen("stop", "", "")
		for first := false; !first; {
			time.Sleep(time.Millisecond)
			msgs, _ := out.snapshot()
			first = slices.Contains(msgs, "audio")
		}
		synctest.Wait()
		msgs, _ := out.snapshot()
		audio := 0
		for _, m := range msgs {
			if m == "audio" {
				audio++
			}
		}
		if n := codec.holding(encoder); n != 0 {
			t.Fatalf("the device has %d of the answer's 18 frames and the encoder is still held", audio)
		}
		if audio >= 18 || strings.Contains(strings.Join(msgs, ""), `"state":"stop"`) {
			t.Fatalf("the answer was played out before the check (%d frames)", audio)
		}
		if r := recs.last(t); r.Outcome != "ok" {
			t.Fatalf("turn record %+v", r)
		}
	})
}
