package opus

import (
	"bytes"
	"slices"
	"testing"
	"testing/synctest"
	"time"
)

// loud is a full-scale answer: a 440 Hz tone over a DC offset, the kind
// of signal whose traces a reset must not carry into the next answer.
func loud(rate, ms int) []int16 {
	pcm := tone(rate, ms, 440)
	for i := range pcm {
		pcm[i] = pcm[i]*4 + 2000
	}
	return pcm
}

func encodeAll(t *testing.T, e *Encoder, pcm []int16) [][]byte {
	t.Helper()
	var pkts [][]byte
	for f := pcm; len(f) >= e.FrameSamples(); f = f[e.FrameSamples():] {
		pkt, err := e.Encode(f[:e.FrameSamples()])
		if err != nil {
			t.Fatal(err)
		}
		pkts = append(pkts, pkt)
	}
	return pkts
}

// An encoder reused for the next answer codes it byte for byte as a new
// encoder does: nothing of the answer before it (another device's,
// maybe) reaches the next one. gopus v0.1.1's Reset alone leaves the
// input filter's memory, and the quiet start of the next answer differs.
func TestReusedEncoderCodesAsNew(t *testing.T) {
	for _, s := range []Settings{Speech, {Complexity: 10, Bitrate: 64000}} {
		next := append(make([]int16, 24000*300/1000), synthSpeech(24000, 1, 7)...) // 300 ms of silence, then speech
		used, err := s.NewEncoder(24000, 60)
		if err != nil {
			t.Fatal(err)
		}
		encodeAll(t, used, loud(24000, 1000))
		if !used.reset() {
			t.Fatal("the encoder cannot be reset to a new one's state (for gopus: clearFilter cannot reach its filter memory): encoders are not reused")
		}
		fresh, _ := s.NewEncoder(24000, 60)
		got, want := encodeAll(t, used, next), encodeAll(t, fresh, next)
		for i := range want {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("%+v: the reused encoder's packet %d of the next answer differs from a new encoder's", s, i)
			}
		}
	}
}

// A decoder reused for the next utterance decodes it sample for sample
// as a new decoder does.
func TestReusedDecoderDecodesAsNew(t *testing.T) {
	enc, _ := NewEncoder(16000, 60)
	first := encodeAll(t, enc, loud(16000, 1000))
	enc2, _ := NewEncoder(16000, 60)
	next := encodeAll(t, enc2, synthSpeech(16000, 1, 3))

	used, _ := NewDecoder(16000)
	for _, p := range first {
		if _, err := used.Decode(p); err != nil {
			t.Fatal(err)
		}
	}
	used.reset() // as Release does
	fresh, _ := NewDecoder(16000)
	for i, p := range next {
		a, err1 := used.Decode(p)
		b, err2 := fresh.Decode(p)
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		if !slices.Equal(a, b) {
			t.Fatalf("frame %d of the next utterance decodes differently after a reset", i)
		}
	}
}

// Codec's coders go back to a pool when released, and a released coder
// serves the next answer: a spoken turn allocates no new coder.
func TestCodecReusesCoders(t *testing.T) {
	var c Codec
	frame := make([]int16, 24000*60/1000)
	allocs := testing.AllocsPerRun(20, func() {
		e, err := c.NewEncoder(24000, 60)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.Encode(frame); err != nil {
			t.Fatal(err)
		}
		e.(interface{ Release() }).Release()
		d, err := c.NewDecoder(16000)
		if err != nil {
			t.Fatal(err)
		}
		d.(interface{ Release() }).Release()
	})
	// Encode's packet is one allocation; a new encoder is hundreds.
	if allocs > 5 {
		t.Fatalf("%.0f allocations per answer: the coders are not reused", allocs)
	}
}

// A shelf keeps released coders across garbage collections, at most
// maxIdle, and lets go of those unused for keepIdle: a hub whose talkers
// went quiet gives their memory back.
func TestShelfLetsGoOfUnusedCoders(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var s shelf[int]
		for i := range maxIdle + 5 {
			s.put(i)
		}
		kept := func() (n int, timer bool) {
			synctest.Wait() // the shelf's timer has run if its time was up
			s.mu.Lock()
			defer s.mu.Unlock()
			return len(s.idle), s.timer != nil
		}
		if n, _ := kept(); n != maxIdle {
			t.Fatalf("%d coders kept, at most %d", n, maxIdle)
		}
		time.Sleep(keepIdle / 2)
		c, ok := s.take()
		if !ok || c != maxIdle-1 {
			t.Fatalf("took %d, %v: want the one released last", c, ok)
		}
		s.put(c) // used again: its time starts now
		time.Sleep(keepIdle/2 + time.Second)
		if n, _ := kept(); n != 1 {
			t.Fatalf("%d coders kept %v after their last use, want only the one used since", n, keepIdle)
		}
		time.Sleep(keepIdle)
		if n, timer := kept(); n != 0 || timer {
			t.Fatal("a coder unused for keepIdle is still kept")
		}
	})
}
