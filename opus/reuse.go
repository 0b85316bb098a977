package opus

import (
	"reflect"
	"sync"
	"time"
	"unsafe"

	"github.com/thesyncim/gopus"
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
// leaves in it must not reach another device's. gopus v0.1.1's
// Encoder.Reset leaves the input filter's memory (docs/upstream/gopus-reset.md),
// so clearFilter clears it as libopus's OPUS_RESET_STATE does; if this
// version of gopus does not have the fields it clears, encoders are not
// reused (encodersReusable).

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
	if e.shelf == nil || !encodersReusable {
		return
	}
	e.reset()
	e.shelf.put(e)
}

// reset returns the encoder to the state of a new one, settings kept.
func (e *Encoder) reset() {
	e.e.Reset()
	clearFilter(e.e)
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
	d.d.Reset()
	d.shelf.put(d)
}

// encodersReusable is whether clearFilter can reach the fields gopus's
// Reset leaves.
var encodersReusable = func() bool {
	e, err := gopus.NewEncoder(gopus.EncoderConfig{SampleRate: 16000, Channels: 1, Application: gopus.ApplicationAudio})
	return err == nil && clearFilter(e)
}()

// clearFilter clears the input high-pass filter's memory of gopus's
// internal encoder, which its Reset leaves (hpMem, and the SILK cutoff's
// smoothing, variableHPSmth2Q15 and variableHPSmth2Inited), and reports
// whether the fields were there with the types of gopus v0.1.1. They are
// unexported, so they are reached by reflection; remove this once gopus's
// Reset clears them (docs/upstream/gopus-reset.md).
func clearFilter(e *gopus.Encoder) bool {
	enc := reflect.ValueOf(e).Elem().FieldByName("enc")
	if enc.Kind() != reflect.Pointer || enc.IsNil() {
		return false
	}
	in := enc.Elem()
	hp := in.FieldByName("hpMem")
	smth := in.FieldByName("variableHPSmth2Q15")
	inited := in.FieldByName("variableHPSmth2Inited")
	if !hp.IsValid() || !smth.IsValid() || !inited.IsValid() ||
		hp.Type() != reflect.TypeFor[[4]float32]() || smth.Kind() != reflect.Int32 || inited.Kind() != reflect.Bool {
		return false
	}
	*(*[4]float32)(unsafe.Pointer(hp.UnsafeAddr())) = [4]float32{}
	*(*int32)(unsafe.Pointer(smth.UnsafeAddr())) = 0
	*(*bool)(unsafe.Pointer(inited.UnsafeAddr())) = false
	return true
}
