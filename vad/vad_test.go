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

// word is a spoken word of n frames over a quiet room's noise: voiced,
// with a syllable every three frames whose level rises and falls (0.35,
// 1, 0.6 of level: about 9 dB), as speech does; a fan's level does not.
func word(level float64, n int, r *rand.Rand) [][]int16 {
	env := []float64{0.35, 1, 0.6}
	var out [][]int16
	for k := range n {
		v, bg := voice(level*env[k%3], k), noise(30, r)
		for i := range v {
			v[i] += bg[i]
		}
		out = append(out, v)
	}
	return out
}

func pause(n int, r *rand.Rand) [][]int16 {
	var out [][]int16
	for range n {
		out = append(out, noise(30, r))
	}
	return out
}

// run pushes frames and returns the index of the frame that started the
// utterance (-1: none) and of each frame that ended one.
func run(v *Energy, frames [][]int16) (start int, ends []int) {
	start = -1
	for i, f := range frames {
		speaking, ended := v.Push(f)
		if speaking && start < 0 {
			start = i
		}
		if ended {
			ends = append(ends, i)
		}
	}
	return start, ends
}

// A person who talks at once after listening starts (after the wake word,
// whose own audio the firmware sends first) is heard from the first
// frame: the room's floor is not learnt from their voice. The utterance
// starts within 300 ms (the frames the conversation keeps from before
// speech began), goes on through pauses of 300 to 500 ms between words,
// and ends once, about 700 ms after the last word.
func TestSpeechFromTheFirstFrame(t *testing.T) {
	for _, level := range []float64{3000, 8000, 16000} {
		r := rand.New(rand.NewPCG(5, 6))
		var frames [][]int16
		for i, w := range []struct{ word, pause int }{{7, 5}, {9, 8}, {6, 7}, {8, 6}, {9, 0}} {
			frames = append(frames, word(level, w.word, r)...)
			if i < 4 {
				frames = append(frames, pause(w.pause, r)...)
			}
		}
		last := len(frames) - 1
		frames = append(frames, pause(30, r)...)
		start, ends := run(NewEnergy(Config{}), frames)
		if start < 0 || start > 4 {
			t.Errorf("level %v: the utterance started at frame %d, want within the first 5 (300 ms)", level, start)
		}
		if len(ends) != 1 || (ends[0]-last)*60 < 700 || (ends[0]-last)*60 > 900 {
			t.Errorf("level %v: utterance ends at frames %v; the last word ends at frame %d", level, ends, last)
		}
	}
}

// Continuous speech from the first frame (1.8 s of syllables, no pause)
// is one utterance that lasts as long as the speech: measured on the
// previous detector, which learnt the floor from the first 180 ms, a
// 1.7 s utterance ended at 1.20 s.
func TestContinuousSpeechFromTheFirstFrame(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	frames := append(word(6000, 30, r), pause(20, r)...)
	start, ends := run(NewEnergy(Config{}), frames)
	if start < 0 || start > 4 || len(ends) != 1 || ends[0] < 30+11 {
		t.Fatalf("utterance from frame %d, ended at frames %v; the speech is frames 0 to 29", start, ends)
	}
}

// Once the room is known, a new utterance (after Reset: the next listen
// start) is found at once, pauses and all.
func TestFloorKeptAcrossUtterances(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	v := NewEnergy(Config{})
	run(v, append(pause(10, r), word(6000, 9, r)...))
	v.Reset()
	frames := append(word(6000, 9, r), pause(6, r)...)
	frames = append(frames, word(6000, 9, r)...)
	frames = append(frames, pause(20, r)...)
	start, ends := run(v, frames)
	if start != 1 || len(ends) != 1 || ends[0] < 24+11 {
		t.Fatalf("utterance from frame %d, ended at frames %v", start, ends)
	}
}
