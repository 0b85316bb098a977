package voice

import (
	"bytes"
	"context"
	"slices"
	"sync"
	"testing"
)

// opusRecognizer takes the device's Opus packets (OpusRecognizer) and
// keeps what each of its recognitions is given: packets, and PCM samples
// (auto mode, where the VAD needs PCM).
type opusRecognizer struct {
	mu      sync.Mutex
	packets [][]byte
	samples int
}

func (r *opusRecognizer) Start(context.Context, string) (Recognition, error) {
	return &opusRecognition{r: r}, nil
}
func (r *opusRecognizer) TakesOpus() bool { return true }

type opusRecognition struct{ r *opusRecognizer }

func (s *opusRecognition) WriteOpus(p []byte) error {
	s.r.mu.Lock()
	defer s.r.mu.Unlock()
	s.r.packets = append(s.r.packets, p) // kept as given: the engine's copy
	return nil
}

func (s *opusRecognition) Write(pcm []int16) error {
	s.r.mu.Lock()
	defer s.r.mu.Unlock()
	s.r.samples += len(pcm)
	return nil
}

func (s *opusRecognition) Finish(context.Context) (string, error) {
	s.r.mu.Lock()
	defer s.r.mu.Unlock()
	if len(s.r.packets) == 0 && s.r.samples == 0 {
		return "", nil
	}
	return "打开客厅的灯", nil
}
func (s *opusRecognition) Close() {}

// Push-to-talk with a recognizer that takes Opus: the device's packets
// reach it as sent, in order, each one its own copy (the transport's
// buffer is reused), a packet whose framing is invalid is counted as bad
// audio and dropped, and no decoder is ever taken from the codec.
func TestManualModePassesOpus(t *testing.T) {
	codec := &countingCodec{t: t, held: map[*countedCoder]bool{}}
	rec := &opusRecognizer{}
	turns := make(chan TurnRecord, 1)
	e := engine(t, Options{Codec: codec, Recognizer: rec, Synthesizer: synthesizer{}, Brain: &brain{},
		OnTurn: func(r TurnRecord) { turns <- r }})
	c := e.Open("aa:00:00:00:00:01", "zh", down, newOutput())
	defer c.Close()
	c.Listen("start", "manual", "")
	buf := make([]byte, 0, 200) // the transport's buffer, reused for every frame
	var sent [][]byte
	for i := range 10 {
		buf = append(buf[:0], 11<<3) // SILK wideband, 60 ms, one frame
		buf = append(buf, bytes.Repeat([]byte{byte(i + 1)}, 60+i)...)
		sent = append(sent, bytes.Clone(buf))
		c.Audio(buf, 0)
		if i == 4 {
			c.Audio([]byte{1<<3 | 1, 1, 2, 3}, 0) // code 1 with an odd length: invalid (RFC 6716 R3)
			c.Audio(nil, 0)                       // empty (R1)
		}
		if n := codec.holding(decoder); n != 0 {
			t.Fatalf("frame %d: a decoder is held", i)
		}
	}
	c.Listen("stop", "", "")
	if r := <-turns; r.Outcome != "ok" || r.Heard != "打开客厅的灯" {
		t.Fatalf("turn %+v", r)
	}
	if n := c.BadAudio.Load(); n != 2 {
		t.Fatalf("%d packets counted as bad audio, want the 2 invalid ones", n)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if !slices.EqualFunc(rec.packets, sent, bytes.Equal) || rec.samples != 0 {
		t.Fatalf("the recognizer got %d packets (and %d samples), not the %d sent", len(rec.packets), rec.samples, len(sent))
	}
	if n := codec.holding(""); n != 0 {
		t.Fatalf("%d coders held after the turn", n)
	}
}

// In auto mode the VAD needs PCM: a recognizer that takes Opus is given
// PCM there, decoded as before.
func TestAutoModeDecodesForOpusRecognizer(t *testing.T) {
	rec := &opusRecognizer{}
	e := engine(t, Options{Recognizer: rec, Synthesizer: synthesizer{}, Brain: &brain{}, NewVAD: func() VAD { return &levelVAD{} }})
	out := newOutput()
	c := e.Open("aa:00:00:00:00:02", "zh", down, out)
	defer c.Close()
	c.Listen("start", "auto", "")
	for range 5 {
		c.Audio(speechFrame(500), 0)
	}
	for range 4 {
		c.Audio(speechFrame(0), 0)
	}
	out.waitFor(t, `"state":"stop"`)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.packets) != 0 || rec.samples < 5*960 {
		t.Fatalf("the recognizer got %d packets and %d samples, want PCM", len(rec.packets), rec.samples)
	}
}
