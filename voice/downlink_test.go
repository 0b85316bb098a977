package voice

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/xiaozhi-hub/hub/opus"
)

// These tests run the real Opus codec on the downlink, in a synctest
// bubble: pacing costs no wall-clock time.

// voiceSynth speaks every text as a second of a voice-like sound (a
// 150 Hz fundamental with harmonics, at the level of speech, about
// -12 dBFS) at 24 kHz, and records the texts it was asked to say.
type voiceSynth struct {
	mu    sync.Mutex
	texts []string
}

func (s *voiceSynth) Synthesize(_ context.Context, text, _ string) (Speech, error) {
	s.mu.Lock()
	s.texts = append(s.texts, text)
	s.mu.Unlock()
	return &voiceSpeech{left: 24000}, nil
}

func (s *voiceSynth) said() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.texts)
}

type voiceSpeech struct{ i, left int }

func (s *voiceSpeech) SampleRate() int { return 24000 }
func (s *voiceSpeech) Read(ctx context.Context) ([]int16, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if s.left == 0 {
		return nil, io.EOF
	}
	n := min(480, s.left)
	out := make([]int16, n)
	for k := range out {
		x := float64(s.i) / 24000
		out[k] = int16(4000 * (math.Sin(2*math.Pi*150*x) + 0.6*math.Sin(2*math.Pi*300*x+1) + 0.3*math.Sin(2*math.Pi*450*x+2)))
		s.i++
	}
	s.left -= n
	return out, nil
}
func (s *voiceSpeech) Close() {}

// packets records the downlink as the device receives it: each text
// message, and each audio packet with its timestamp.
type packets struct {
	mu      sync.Mutex
	items   []packet
	stopped chan struct{}
}

type packet struct {
	text string // "" for audio
	opus []byte
	ts   uint32
}

func newPackets() *packets { return &packets{stopped: make(chan struct{})} }

func (p *packets) WriteText(_ context.Context, m []byte) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.items = append(p.items, packet{text: string(m)})
	if string(m) == `{"type":"tts","state":"stop"}` {
		close(p.stopped)
	}
	return nil
}

func (p *packets) WriteAudio(_ context.Context, pkt []byte, ts uint32) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.items = append(p.items, packet{opus: slices.Clone(pkt), ts: ts})
	return nil
}

func (p *packets) End(string) {}

func (p *packets) all() []packet {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.items)
}

// threeSentences answers in three sentences.
type threeSentences struct{}

func (threeSentences) Ready() error { return nil }
func (threeSentences) Answer(_ context.Context, _ Turn, onText func(string)) (string, error) {
	for _, s := range []string{"The lamp is on.", " The fan is off.", " Anything else?"} {
		onText(s)
	}
	return "The lamp is on. The fan is off. Anything else?", nil
}

// speakAnswer runs one push-to-talk turn answered by brain and returns
// what the device received.
func speakAnswer(t *testing.T, brain Brain, syn Synthesizer) []packet {
	e := New(Options{Codec: opusCodec{}, Recognizer: &recognizer{}, Synthesizer: syn, Brain: brain})
	defer e.Close()
	out := newPackets()
	defer ask(t, e, "aa:00:00:00:00:41", out).Close()
	<-out.stopped
	return out.all()
}

// ask opens a conversation on e and asks (push to talk): the turn runs
// when ask returns.
func ask(t *testing.T, e *Engine, deviceID string, out Output) *Conversation {
	c := e.Open(deviceID, "en", down, out)
	c.Listen("start", "manual", "")
	c.Audio(opusFrame(t, 500), 0)
	synctest.Wait()
	c.Listen("stop", "", "")
	return c
}

// opusFrame is one 60 ms uplink frame at 16 kHz of a constant level.
func opusFrame(t *testing.T, level int16) []byte {
	enc, err := opus.NewEncoder(16000, 60)
	if err != nil {
		t.Fatal(err)
	}
	pcm := make([]int16, 960)
	for i := range pcm {
		pcm[i] = level * int16(1-2*(i/20%2)) // a square wave: not silence
	}
	pkt, err := enc.Encode(pcm)
	if err != nil {
		t.Fatal(err)
	}
	return pkt
}

// A spoken answer of several sentences, decoded as the device does (one
// decoder from tts start to tts stop: firmware 2.4.2 resets it at tts
// start only), has no click at the sentence boundaries: no frame there
// peaks far above the answer's ordinary frames.
func TestAnswerHasNoClickBetweenSentences(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		got := speakAnswer(t, threeSentences{}, &voiceSynth{})
		dec, err := opus.NewDecoder(down.SampleRate)
		if err != nil {
			t.Fatal(err)
		}
		var peaks []int
		var boundaries []int // index in peaks of each sentence's first frame
		for _, p := range got {
			if p.opus == nil {
				if stateOf(p.text) == "sentence_start" {
					boundaries = append(boundaries, len(peaks))
				}
				continue
			}
			pcm, err := dec.Decode(p.opus)
			if err != nil {
				t.Fatalf("downlink frame %d: %v", len(peaks), err)
			}
			peak := 0
			for _, v := range pcm {
				peak = max(peak, int(math.Abs(float64(v))))
			}
			peaks = append(peaks, peak)
		}
		if len(boundaries) != 3 || len(peaks) < 3*8 {
			t.Fatalf("%d sentences, %d frames", len(boundaries), len(peaks))
		}
		sorted := slices.Sorted(slices.Values(peaks))
		median := sorted[len(sorted)/2]
		for _, b := range boundaries[1:] {
			for i := b - 1; i < min(b+2, len(peaks)); i++ {
				if peaks[i] > 2*median {
					t.Errorf("a click at a sentence boundary: frame %d peaks at %d, the median frame at %d (peaks %v)", i, peaks[i], median, peaks)
				}
			}
		}
	})
}

// Every downlink frame carries its play-out time: never 0 (the firmware
// ignores 0), one frame duration (60 ms) after the previous frame's, across
// the sentences of the answer.
func TestDownlinkTimestamps(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		got := speakAnswer(t, threeSentences{}, &voiceSynth{})
		var ts []uint32
		for _, p := range got {
			if p.opus != nil {
				ts = append(ts, p.ts)
			}
		}
		if len(ts) < 3*8 {
			t.Fatalf("%d frames", len(ts))
		}
		if ts[0] == 0 {
			t.Fatalf("the first frame's timestamp is 0 (timestamps %v)", ts)
		}
		for i := 1; i < len(ts); i++ {
			if ts[i] != ts[i-1]+uint32(down.FrameDuration) {
				t.Fatalf("frame %d has timestamp %d after %d: want %d ms later (timestamps %v)", i, ts[i], ts[i-1], down.FrameDuration, ts)
			}
		}
	})
}

func stateOf(msg string) string {
	var v struct{ State string }
	_ = json.Unmarshal([]byte(msg), &v)
	return v.State
}

// The timestamps of a conversation never go back: an answer cut short by
// the button (its audio went out ahead of time) is followed by one whose
// frames come after all of its frames.
func TestDownlinkTimestampsIncreaseAcrossAnswers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := New(Options{Codec: opusCodec{}, Recognizer: &recognizer{}, Synthesizer: &voiceSynth{}, Brain: threeSentences{}})
		defer e.Close()
		out := newPackets()
		c := e.Open("aa:00:00:00:00:44", "en", down, out)
		defer c.Close()
		turn := func(abortAfter int) {
			c.Listen("start", "manual", "")
			c.Audio(opusFrame(t, 500), 0)
			synctest.Wait()
			c.Listen("stop", "", "")
			for abortAfter > 0 {
				n := 0
				for _, p := range out.all() {
					if p.opus != nil {
						n++
					}
				}
				if n >= abortAfter {
					c.Abort()
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
			<-out.stopped
		}
		turn(8) // 480 ms of audio sent, some ahead of time, then the button
		first := len(out.all())
		out.mu.Lock()
		out.stopped = make(chan struct{})
		out.mu.Unlock()
		turn(0)
		var last uint32
		for i, p := range out.all() {
			if p.opus == nil {
				continue
			}
			if p.ts <= last {
				t.Fatalf("packet %d (%s answer) has timestamp %d after %d", i, map[bool]string{true: "first", false: "second"}[i < first], p.ts, last)
			}
			last = p.ts
		}
	})
}

// The button during the wait for the device to be speaking stops the
// answer at once: none of the frames encoded ahead reaches the device.
func TestAbortDuringTheWaitSendsNoAudio(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := New(Options{Codec: opusCodec{}, Recognizer: &recognizer{}, Synthesizer: &voiceSynth{}, Brain: threeSentences{}})
		defer e.Close()
		out := newPackets()
		c := ask(t, e, "aa:00:00:00:00:46", out)
		defer c.Close()
		synctest.Wait() // the first frames are encoded; the device is not speaking yet
		c.Abort()
		<-out.stopped
		time.Sleep(time.Second)
		synctest.Wait()
		got := out.all()
		for _, p := range got {
			if p.opus != nil {
				t.Fatalf("audio reached the device after the button: %d packets", len(got))
			}
		}
		if last := got[len(got)-1]; last.text != `{"type":"tts","state":"stop"}` {
			t.Fatalf("the device's last message is %q", last.text)
		}
	})
}

// slowSynth speaks one sentence whose audio comes a frame at a time, when
// the test lets it (as a synthesis server that is slow, or a CPU shared by
// many answers).
type slowSynth struct{ frames chan []int16 }

func (s *slowSynth) Synthesize(context.Context, string, string) (Speech, error) {
	return &slowSpeech{s.frames}, nil
}

type slowSpeech struct{ frames chan []int16 }

func (s *slowSpeech) SampleRate() int { return 24000 }
func (s *slowSpeech) Read(ctx context.Context) ([]int16, error) {
	select {
	case f, ok := <-s.frames:
		if !ok {
			return nil, io.EOF
		}
		return f, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
func (s *slowSpeech) Close() {}

// An answer starts with three frames at once, not one: the device plays
// from its first frame on, and a second frame that comes late (many
// answers sharing the CPU) is a gap in the answer. The wait for the
// device to be speaking does not send a lone first frame.
func TestAnswerStartsWithThreeFrames(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		syn := &slowSynth{frames: make(chan []int16)}
		e := New(Options{Codec: opusCodec{}, Recognizer: &recognizer{}, Synthesizer: syn, Brain: &oneSentence{}})
		defer e.Close()
		out := newPackets()
		c := ask(t, e, "aa:00:00:00:00:47", out)
		defer c.Close()
		audio := func() int {
			n := 0
			for _, p := range out.all() {
				if p.opus != nil {
					n++
				}
			}
			return n
		}
		frame := make([]int16, 24000*60/1000)
		for i := range 2 {
			syn.frames <- frame
			time.Sleep(time.Second) // long past the wait for the device to be speaking
			synctest.Wait()
			if n := audio(); n != 0 {
				t.Fatalf("after %d frames encoded the device got %d: an answer starts with three", i+1, n)
			}
		}
		syn.frames <- frame
		synctest.Wait()
		if n := audio(); n != 3 {
			t.Fatalf("after three frames encoded the device got %d, want 3 at once", n)
		}
		syn.frames <- frame // the fourth, paced
		close(syn.frames)
		<-out.stopped
		if n := audio(); n != 4 {
			t.Fatalf("the answer's frames: %d, want 4", n)
		}
	})
}

// deaf is a device whose audio writes fail (a connection that stopped
// taking data): its texts are still recorded.
type deaf struct{ *packets }

func (deaf) WriteAudio(context.Context, []byte, uint32) error {
	return errors.New("write: connection timed out")
}

// tenSentences answers in ten sentences: ten seconds of voiceSynth,
// more than the downlink queues ahead of the device (3.8 s).
type tenSentences struct{}

func (tenSentences) Ready() error { return nil }
func (tenSentences) Answer(_ context.Context, _ Turn, onText func(string)) (string, error) {
	for i := range 10 {
		onText(fmt.Sprintf("Sentence %d. ", i))
	}
	return "", nil
}

// A device that takes no audio is not spoken to any further: once a write
// has failed, the rest of the answer is neither synthesised nor encoded
// (only what was queued ahead of the device, 3.8 s, was), the turn is
// recorded as speech_failed with the write's error, and tts stop still
// ends it.
func TestDeviceThatTakesNoAudioIsNotSpokenTo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		syn := &voiceSynth{}
		var recs records
		e := New(Options{Codec: opusCodec{}, Recognizer: &recognizer{}, Synthesizer: syn, Brain: tenSentences{}, OnTurn: recs.add})
		defer e.Close()
		out := deaf{newPackets()}
		defer ask(t, e, "aa:00:00:00:00:44", out).Close()
		<-out.stopped
		if got := syn.said(); len(got) > 5 {
			t.Fatalf("synthesised %d of 10 sentences for a device that takes no audio, want what fits the queue (at most 5)", len(got))
		}
		r := recs.last(t)
		if r.Outcome != "speech_failed" || !strings.Contains(r.Error, "connection timed out") {
			t.Fatalf("turn record %+v, want speech_failed with the write's error", r)
		}
	})
}
