package opus

import (
	"sync"
	"time"
)

// Coders are reused: a gopus encoder is about 440 KB once it has encoded
// (its analysis state and the scratch of its first frame) and a decoder
// about 195 KB, so a hub that made one per answer and per utterance
// allocated most of a spoken turn's memory in them (BENCHMARKS.md, "Voice
// under load, from outside"). Codec's coders come from shelves, one per
// kind of coder, and go back with Release, reset.
//
// A shelf, not a sync.Pool: the garbage collector empties a sync.Pool
// within two cycles, and a hub under voice load collects several times a
// second, so the coders were gone before the next turn. A shelf keeps at
// most maxIdle coders, and lets go of those left unused for keepIdle, so
// that a hub whose talkers went quiet gives their memory back.
//
// A reset coder must code exactly as a new one: what one device's answer
// leaves in it must not reach another device's: an encoder whose reset
// cannot promise that is not kept.

const (
	maxIdle  = 128              // coders kept per kind: 56 MB of encoders at most
	keepIdle = 30 * time.Second // a coder unused this long is let go
)

// shelf keeps released coders of one kind, the latest on top.
type shelf[C any] struct {
	mu    sync.Mutex
	idle  []shelved[C]
	timer *time.Timer // lets go of coders unused for keepIdle; set while idle is not empty
}

type shelved[C any] struct {
	c     C
	since time.Time
}

// take returns the coder released last, if any.
func (s *shelf[C]) take() (c C, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n := len(s.idle); n > 0 {
		c, ok = s.idle[n-1].c, true
		s.idle[n-1] = shelved[C]{}
		s.idle = s.idle[:n-1]
	}
	return c, ok
}

// put keeps c, unless maxIdle are kept already.
func (s *shelf[C]) put(c C) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.idle) >= maxIdle {
		return
	}
	s.idle = append(s.idle, shelved[C]{c, time.Now()})
	if s.timer == nil {
		s.timer = time.AfterFunc(keepIdle, s.tidy)
	}
}

// tidy lets go of the coders unused for keepIdle (the oldest are at the
// bottom), and comes back when the next one's time is up.
func (s *shelf[C]) tidy() {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	old := 0
	for old < len(s.idle) && now.Sub(s.idle[old].since) >= keepIdle {
		old++
	}
	clear(s.idle[:old])
	s.idle = append(s.idle[:0], s.idle[old:]...)
	if len(s.idle) == 0 {
		s.idle, s.timer = nil, nil
		return
	}
	s.timer.Reset(keepIdle - now.Sub(s.idle[0].since))
}

type encoderKind struct {
	rate, frameMs int
	s             Settings
}

var shelves struct {
	sync.Mutex
	encoders map[encoderKind]*shelf[*Encoder]
	decoders map[int]*shelf[*Decoder] // by rate
}

// shelfFor returns m's shelf for key, made on first use.
func shelfFor[K comparable, C any](m *map[K]*shelf[C], key K) *shelf[C] {
	shelves.Lock()
	defer shelves.Unlock()
	if *m == nil {
		*m = make(map[K]*shelf[C])
	}
	s := (*m)[key]
	if s == nil {
		s = new(shelf[C])
		(*m)[key] = s
	}
	return s
}

// takeEncoder returns a reset encoder of this kind from its shelf, or a
// new one.
func (s Settings) takeEncoder(rate, frameMs int) (*Encoder, error) {
	sh := shelfFor(&shelves.encoders, encoderKind{rate, frameMs, s})
	if e, ok := sh.take(); ok {
		return e, nil
	}
	e, err := s.NewEncoder(rate, frameMs)
	if err != nil {
		return nil, err
	}
	e.shelf = sh
	return e, nil
}

// Release resets an encoder made by Codec and keeps it for the next
// answer; the caller uses it no more. It does nothing for an encoder made
// by NewEncoder.
func (e *Encoder) Release() {
	if e.shelf == nil || !e.reset() {
		return
	}
	e.shelf.put(e)
}

// takeDecoder returns a reset decoder to rate from its shelf, or a new
// one.
func takeDecoder(rate int) (*Decoder, error) {
	sh := shelfFor(&shelves.decoders, rate)
	if d, ok := sh.take(); ok {
		return d, nil
	}
	d, err := NewDecoder(rate)
	if err != nil {
		return nil, err
	}
	d.shelf = sh
	return d, nil
}

// Release resets a decoder made by Codec and keeps it for the next
// utterance; the caller uses it no more. It does nothing for a decoder
// made by NewDecoder.
func (d *Decoder) Release() {
	if d.shelf == nil {
		return
	}
	d.reset()
	d.shelf.put(d)
}
