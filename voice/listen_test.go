package voice

import (
	"math"
	"testing"
	"testing/synctest"
	"time"

	"github.com/xiaozhi-hub/hub/vad"
)

// syllables is n frames (60 ms at 16 kHz) of speech as a person talks:
// voiced, a syllable every three frames rising and falling by about 9 dB,
// over a quiet room; then quiet frames of the room.
func syllables(n, quiet int) [][]byte {
	env := []float64{0.35, 1, 0.6}
	var frames [][]byte
	for k := range n + quiet {
		pcm := make([]int16, 960)
		for i := range pcm {
			x := float64(k*960+i) / 16000
			v := 30 * math.Sin(2*math.Pi*1234*x) // the room
			if k < n {
				for h := 1; h <= 8; h++ {
					v += 3000 * env[k%3] * math.Sin(2*math.Pi*150*float64(h)*x) / float64(h)
				}
			}
			pcm[i] = int16(v)
		}
		b, _ := pcmCoder{}.Encode(pcm)
		frames = append(frames, b)
	}
	return frames
}

// Auto mode with the hub's own detector (vad.Energy): a person who starts
// talking at once after listen start (right after the wake word) and talks
// for 2.4 s is heard whole: the recognizer gets all of it, and the turn
// follows the end of the speech, not a cut in its middle.
func TestAutoModeSpeechFromTheFirstFrame(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recognizer{}
		var recs records
		e := New(Options{Codec: pcmCodec{}, Recognizer: rec, Synthesizer: synthesizer{}, Brain: &brain{}, OnTurn: recs.add,
			NewVAD: func() VAD { return vad.NewEnergy(vad.Config{}) }})
		defer e.Close()
		out := newOutput()
		c := e.Open("aa:00:00:00:00:42", "zh", down, out)
		defer c.Close()
		c.Listen("start", "auto", "")
		const speechFrames = 40 // 2.4 s
		for _, f := range syllables(speechFrames, 20) {
			c.Audio(f, 0)
			time.Sleep(60 * time.Millisecond) // the device's pace (the bubble's clock)
		}
		out.waitFor(t, `"state":"stop"`)
		recs.last(t)
		rec.mu.Lock()
		heard := rec.samples
		rec.mu.Unlock()
		if heard < speechFrames*960 {
			t.Fatalf("the recognizer got %d ms of the %d ms spoken from the first frame", heard/16, speechFrames*60)
		}
		recs.mu.Lock()
		defer recs.mu.Unlock()
		if n := len(recs.all); n != 1 {
			t.Fatalf("%d turns for one utterance (it was cut in pieces)", n)
		}
	})
}
