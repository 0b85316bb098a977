package vad

import (
	"math"
	"math/rand/v2"
	"testing"
)

const frame = 960 // 60 ms at 16 kHz

func noise(level float64, r *rand.Rand) []int16 {
	pcm := make([]int16, frame)
	for i := range pcm {
		pcm[i] = int16(level * (r.Float64()*2 - 1))
	}
	return pcm
}

// voice is a vowel-like signal: harmonics of 150 Hz.
func voice(level float64, n int) []int16 {
	pcm := make([]int16, frame)
	for i := range pcm {
		t := float64(n*frame+i) / 16000
		v := 0.0
		for h := 1; h <= 8; h++ {
			v += math.Sin(2*math.Pi*150*float64(h)*t) / float64(h)
		}
		pcm[i] = int16(level * v / 2)
	}
	return pcm
}

// A sentence in a quiet room, with a pause between words, then silence:
// one utterance, ended about 700 ms after the last word, not at the pause.
func TestUtteranceInARoom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	v := NewEnergy(Config{})
	var events []string
	push := func(pcm []int16) {
		if speaking, ended := v.Push(pcm); ended {
			events = append(events, "end")
		} else if speaking && (len(events) == 0 || events[len(events)-1] == "end") {
			events = append(events, "start")
		}
	}
	for range 20 { // 1.2 s of room noise (the first 180 ms calibrate)
		push(noise(200, r))
	}
	if len(events) != 0 {
		t.Fatalf("room noise counted as speech: %v", events)
	}
	for n := range 10 { // words
		push(voice(6000, n))
	}
	for range 5 { // a 300 ms pause
		push(noise(200, r))
	}
	for n := range 10 {
		push(voice(6000, n))
	}
	if len(events) != 1 {
		t.Fatalf("events during the sentence: %v", events)
	}
	quiet := 0
	for len(events) < 2 && quiet < 50 {
		push(noise(200, r))
		quiet++
	}
	if len(events) != 2 || quiet*60 < 700 || quiet*60 > 900 {
		t.Fatalf("events %v after %d ms of silence", events, quiet*60)
	}
}

// A click (one loud frame) does not start an utterance; a loud room raises
// the floor, and speech above it is still found.
func TestClicksAndLoudRooms(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	v := NewEnergy(Config{})
	for range 10 {
		v.Push(noise(100, r))
	}
	if speaking, _ := v.Push(voice(8000, 0)); speaking {
		t.Fatal("one loud frame started an utterance")
	}
	v.Push(noise(100, r))
	v = NewEnergy(Config{})
	for range 40 { // a fan running when listening starts
		if speaking, _ := v.Push(noise(2500, r)); speaking {
			t.Fatal("steady fan noise counted as speech")
		}
	}
	speaking := false
	for n := range 5 {
		speaking, _ = v.Push(voice(16000, n))
	}
	if !speaking {
		t.Fatal("speech over the fan not found")
	}
}

func BenchmarkPush(b *testing.B) {
	v := NewEnergy(Config{})
	f := voice(6000, 0)
	for b.Loop() {
		v.Push(f)
	}
}
