package voice

import (
	"context"
	"math"
	"strings"
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

// eagerOutput is a device that acts on tts stop at once, as it receives
// it: next runs then, the first time.
type eagerOutput struct {
	*output
	next func()
}

func (o *eagerOutput) WriteText(ctx context.Context, m []byte) error {
	err := o.output.WriteText(ctx, m)
	if string(m) == `{"type":"tts","state":"stop"}` && o.next != nil {
		next := o.next
		o.next = nil
		next()
	}
	return err
}

// A device that talks again the moment it receives tts stop (push to
// talk held at once) is heard: the turn is over for the hub before its
// tts stop goes out, and the next answer follows the first one's end.
func TestTalkAgainRightAfterTTSStop(t *testing.T) {
	var recs records
	e := engine(t, Options{Recognizer: &recognizer{}, Synthesizer: synthesizer{}, Brain: &brain{}, OnTurn: recs.add})
	out := &eagerOutput{output: newOutput()}
	c := e.Open("aa:00:00:00:00:44", "zh", down, out)
	defer c.Close()
	talk := func() {
		c.Listen("start", "manual", "")
		for range 3 {
			c.Audio(speechFrame(500), 0)
		}
		c.Listen("stop", "", "")
	}
	out.next = talk
	talk()
	deadline := time.Now().Add(10 * time.Second)
	for {
		msgs, _ := out.snapshot()
		s := strings.Join(summary(msgs), " | ")
		recs.mu.Lock()
		n := len(recs.all)
		recs.mu.Unlock()
		// The turn record may come just before the second tts stop is
		// written: wait for both.
		if n == 2 && strings.HasSuffix(s, "tts stop") {
			// Each turn whole, the second after the first's tts stop.
			first, second, found := strings.Cut(s, "tts stop | ")
			if !found || !strings.HasPrefix(first, "stt 打开客厅的灯") || !strings.HasPrefix(second, "stt 打开客厅的灯") || !strings.HasSuffix(second, "tts stop") {
				t.Fatalf("the device received %s", s)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the second turn was not answered: %s", s)
		}
		time.Sleep(5 * time.Millisecond)
	}
	recs.mu.Lock()
	defer recs.mu.Unlock()
	for _, r := range recs.all {
		if r.Outcome != "ok" {
			t.Fatalf("turn records %+v", recs.all)
		}
	}
}
