package opus

import (
	"reflect"
	"sync"
	"unsafe"

	"github.com/thesyncim/gopus"
)

// Coders are reused: a gopus encoder is about 440 KB once it has encoded
// (its analysis state and the scratch of its first frame) and a decoder
// about 195 KB, so a hub that made one per answer and per utterance
// allocated most of a spoken turn's memory in them (BENCHMARKS.md, "Voice
// under load, from outside"). Codec's coders come from pools, one per
// kind of coder, and go back with Release, reset.
//
// A reset coder must code exactly as a new one: what one device's answer
// leaves in it must not reach another device's. gopus v0.1.1's
// Encoder.Reset leaves the input filter's memory (docs/upstream/gopus-reset.md),
// so clearFilter clears it as libopus's OPUS_RESET_STATE does; if this
// version of gopus does not have the fields it clears, encoders are not
// reused (encodersReusable).

type encoderKind struct {
	rate, frameMs int
	s             Settings
}

var pools struct {
	sync.Mutex
	encoders map[encoderKind]*sync.Pool // of *Encoder
	decoders map[int]*sync.Pool         // of *Decoder, by rate
}

// poolFor returns m's pool for key, made on first use. pools is locked.
func poolFor[K comparable](m *map[K]*sync.Pool, key K) *sync.Pool {
	pools.Lock()
	defer pools.Unlock()
	if *m == nil {
		*m = make(map[K]*sync.Pool)
	}
	p := (*m)[key]
	if p == nil {
		p = new(sync.Pool)
		(*m)[key] = p
	}
	return p
}

// takeEncoder returns a reset encoder of this kind from the pool, or a new
// one.
func (s Settings) takeEncoder(rate, frameMs int) (*Encoder, error) {
	pool := poolFor(&pools.encoders, encoderKind{rate, frameMs, s})
	if e, ok := pool.Get().(*Encoder); ok {
		return e, nil
	}
	e, err := s.NewEncoder(rate, frameMs)
	if err != nil {
		return nil, err
	}
	e.pool = pool
	return e, nil
}

// Release resets an encoder made by Codec and keeps it for the next
// answer; the caller uses it no more. It does nothing for an encoder made
// by NewEncoder.
func (e *Encoder) Release() {
	if e.pool == nil || !encodersReusable {
		return
	}
	e.reset()
	e.pool.Put(e)
}

// reset returns the encoder to the state of a new one, settings kept.
func (e *Encoder) reset() {
	e.e.Reset()
	clearFilter(e.e)
}

// takeDecoder returns a reset decoder to rate from the pool, or a new one.
func takeDecoder(rate int) (*Decoder, error) {
	pool := poolFor(&pools.decoders, rate)
	if d, ok := pool.Get().(*Decoder); ok {
		return d, nil
	}
	d, err := NewDecoder(rate)
	if err != nil {
		return nil, err
	}
	d.pool = pool
	return d, nil
}

// Release resets a decoder made by Codec and keeps it for the next
// utterance; the caller uses it no more. It does nothing for a decoder
// made by NewDecoder.
func (d *Decoder) Release() {
	if d.pool == nil {
		return
	}
	d.d.Reset()
	d.pool.Put(d)
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
