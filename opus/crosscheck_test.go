//go:build opuscheck

// The cross-check against libopus, the firmware's own codec family: run
// with Debian's libopus-dev installed and
//
//	go test -tags "opuscheck nolibopusfile" ./opus
//
// It checks gopus, the default implementation, against libopus (through
// gopkg.in/hraban/opus.v2). It is kept out of the default build (cgo, a C
// library) and of CI.
package opus

import (
	"math"
	"testing"

	libopus "gopkg.in/hraban/opus.v2"
)

func voiced(rate, ms, n int) []int16 {
	pcm := make([]int16, rate*ms/1000)
	for i := range pcm {
		x := float64(n*len(pcm)+i) / float64(rate)
		pcm[i] = int16(6000*math.Sin(2*math.Pi*180*x) + 3000*math.Sin(2*math.Pi*360*x))
	}
	return pcm
}

// rms of the difference between two signals, relative to the first.
func relErr(a, b []int16) float64 {
	var d, e float64
	for i := range a {
		d += math.Pow(float64(a[i])-float64(b[i]), 2)
		e += math.Pow(float64(a[i]), 2)
	}
	return math.Sqrt(d / e)
}

// The uplink as the firmware encodes it (libopus, 16 kHz, 60 ms) decodes
// in gopus to what libopus itself decodes; the downlink gopus encodes
// (24 kHz, 60 ms) decodes in libopus (as on the device) to what gopus
// decodes, with the signal's level.
func TestInterchangeableWithLibopus(t *testing.T) {
	enc, err := libopus.NewEncoder(16000, 1, libopus.AppVoIP)
	if err != nil {
		t.Fatal(err)
	}
	ref, _ := libopus.NewDecoder(16000, 1)
	ours, _ := NewDecoder(16000)
	buf := make([]byte, 4000)
	out := make([]int16, 960)
	for n := range 20 {
		k, err := enc.Encode(voiced(16000, 60, n), buf)
		if err != nil {
			t.Fatal(err)
		}
		m, err := ref.Decode(buf[:k], out)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ours.Decode(buf[:k])
		if err != nil || len(got) != m {
			t.Fatalf("frame %d: gopus %d samples, %v; libopus %d", n, len(got), err, m)
		}
		if e := relErr(out[:m], got); n > 2 && e > 0.01 {
			t.Fatalf("uplink frame %d: gopus and libopus decodes differ by %.3f", n, e)
		}
	}
	down, _ := NewEncoder(24000, 60)
	dec, _ := libopus.NewDecoder(24000, 1)
	ours24, _ := NewDecoder(24000)
	pcm := make([]int16, 1440)
	for n := range 20 {
		src := voiced(24000, 60, n)
		pkt, err := down.Encode(src)
		if err != nil {
			t.Fatal(err)
		}
		m, err := dec.Decode(pkt, pcm)
		if err != nil || m != 1440 {
			t.Fatalf("downlink frame %d: libopus decoded %d samples, %v", n, m, err)
		}
		got, err := ours24.Decode(pkt)
		if err != nil {
			t.Fatal(err)
		}
		if e := relErr(pcm[:m], got); n > 2 && e > 0.01 {
			t.Fatalf("downlink frame %d: libopus and gopus decodes differ by %.3f", n, e)
		}
		if ls, lo := energy(src), energy(pcm[:m]); n > 2 && (lo < ls/2 || lo > 2*ls) {
			t.Fatalf("downlink frame %d: level %0.f, the signal's %.0f", n, lo, ls)
		}
	}
}
