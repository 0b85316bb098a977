package opus

import (
	"math"
	"testing"
)

func tone(rate, ms int, hz float64) []int16 {
	pcm := make([]int16, rate*ms/1000)
	for i := range pcm {
		pcm[i] = int16(8000 * math.Sin(2*math.Pi*hz*float64(i)/float64(rate)))
	}
	return pcm
}

func energy(pcm []int16) float64 {
	var e float64
	for _, v := range pcm {
		e += float64(v) * float64(v)
	}
	return math.Sqrt(e / float64(max(1, len(pcm))))
}

// The downlink as the firmware decodes it (24 kHz, 60 ms frames) and the
// uplink (16 kHz, 60 ms) round-trip: one packet per frame, the same number
// of samples back, and the signal's level kept.
func TestRoundTrip(t *testing.T) {
	for _, c := range []struct{ rate, ms int }{{24000, 60}, {16000, 60}, {16000, 20}} {
		enc, err := NewEncoder(c.rate, c.ms)
		if err != nil {
			t.Fatal(err)
		}
		dec, err := NewDecoder(c.rate)
		if err != nil {
			t.Fatal(err)
		}
		var in, out []int16
		for range 20 {
			f := tone(c.rate, c.ms, 440)
			pkt, err := enc.Encode(f)
			if err != nil {
				t.Fatal(err)
			}
			pcm, err := dec.Decode(pkt)
			if err != nil {
				t.Fatal(err)
			}
			if len(pcm) != len(f) {
				t.Fatalf("%d Hz/%d ms: decoded %d samples from a frame of %d", c.rate, c.ms, len(pcm), len(f))
			}
			in, out = append(in, f...), append(out, pcm...)
		}
		if ei, eo := energy(in[len(in)/2:]), energy(out[len(out)/2:]); eo < ei/2 || eo > ei*2 {
			t.Fatalf("%d Hz: level in %.0f, out %.0f", c.rate, ei, eo)
		}
	}
	if _, err := NewEncoder(24000, 60); err != nil {
		t.Fatal(err)
	}
	enc, _ := NewEncoder(24000, 60)
	if _, err := enc.Encode(make([]int16, 100)); err == nil {
		t.Fatal("a short frame was encoded")
	}
}

// Garbage from a device is an error, never a crash.
func FuzzDecode(f *testing.F) {
	enc, _ := NewEncoder(16000, 60)
	good, _ := enc.Encode(tone(16000, 60, 300))
	f.Add(good)
	f.Add([]byte{0xf8, 0xff, 0xfe})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, pkt []byte) {
		dec, err := NewDecoder(16000)
		if err != nil {
			t.Fatal(err)
		}
		pcm, err := dec.Decode(pkt)
		if err == nil && len(pcm) > 16000*120/1000 {
			t.Fatalf("decoded %d samples from one packet", len(pcm))
		}
	})
}

func BenchmarkDecode16k60ms(b *testing.B) {
	enc, _ := NewEncoder(16000, 60)
	pkt, _ := enc.Encode(tone(16000, 60, 300))
	dec, _ := NewDecoder(16000)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := dec.Decode(pkt); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncode24k60ms(b *testing.B) {
	enc, _ := NewEncoder(24000, 60)
	f := tone(24000, 60, 300)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := enc.Encode(f); err != nil {
			b.Fatal(err)
		}
	}
}
