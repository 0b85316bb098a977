package voice

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xiaozhi-hub/hub/protocol"
)

// These tests drive the turn logic with in-memory stand-ins for the codec
// and the providers; the end-to-end tests run the real codec and
// stand-in provider servers over their wire formats.

// pcmCodec "encodes" PCM as its little-endian bytes.
type pcmCodec struct{}

func (pcmCodec) NewDecoder(int) (Decoder, error)      { return pcmCoder{}, nil }
func (pcmCodec) NewEncoder(int, int) (Encoder, error) { return pcmCoder{}, nil }

type pcmCoder struct{}

func (pcmCoder) Decode(p []byte) ([]int16, error) {
	if len(p)%2 != 0 {
		return nil, errors.New("odd packet")
	}
	out := make([]int16, len(p)/2)
	for i := range out {
		out[i] = int16(binary.LittleEndian.Uint16(p[2*i:]))
	}
	return out, nil
}

func (pcmCoder) Encode(pcm []int16) ([]byte, error) {
	b := make([]byte, 2*len(pcm))
	for i, v := range pcm {
		binary.LittleEndian.PutUint16(b[2*i:], uint16(v))
	}
	return b, nil
}

func speechFrame(level int16) []byte {
	pcm := make([]int16, 960)
	for i := range pcm {
		pcm[i] = level
	}
	b, _ := pcmCoder{}.Encode(pcm)
	return b
}

// recognizer hears "打开客厅的灯" in any audio with speech in it.
type recognizer struct {
	err, finishErr error
	mu             sync.Mutex
	samples        int
}

func (r *recognizer) Start(context.Context, string) (Recognition, error) {
	if r.err != nil {
		return nil, r.err
	}
	return &recognition{r: r}, nil
}

type recognition struct {
	r     *recognizer
	heard bool
}

func (s *recognition) Write(pcm []int16) error {
	s.r.mu.Lock()
	s.r.samples += len(pcm)
	s.r.mu.Unlock()
	for _, v := range pcm {
		s.heard = s.heard || v != 0
	}
	return nil
}

func (s *recognition) Finish(context.Context) (string, error) {
	if s.r.finishErr != nil {
		return "", s.r.finishErr
	}
	if !s.heard {
		return "", nil
	}
	return "打开客厅的灯", nil
}
func (s *recognition) Close() {}

// synthesizer speaks 60 ms of 24 kHz audio per rune, in chunks of 500 samples.
type synthesizer struct{ err error }

func (s synthesizer) Synthesize(_ context.Context, text, _ string) (Speech, error) {
	if s.err != nil {
		return nil, s.err
	}
	return &speech{left: 1440 * len([]rune(text))}, nil
}

type speech struct{ left int }

func (s *speech) SampleRate() int { return 24000 }
func (s *speech) Read(ctx context.Context) ([]int16, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if s.left == 0 {
		return nil, io.EOF
	}
	n := min(500, s.left)
	s.left -= n
	out := make([]int16, n)
	for i := range out {
		out[i] = 1000
	}
	return out, nil
}
func (s *speech) Close() {}

// brain answers in two sentences, in deltas.
type brain struct {
	err   error
	mu    sync.Mutex
	turns []Turn
	hold  chan struct{} // when set, the answer waits for it (or the context)
}

func (b *brain) Ready() error { return nil }
func (b *brain) Answer(ctx context.Context, t Turn, onText func(string)) (string, error) {
	b.mu.Lock()
	b.turns = append(b.turns, t)
	b.mu.Unlock()
	if b.err != nil {
		return "", b.err
	}
	for _, d := range []string{"好的，", "客厅的灯", "已经打开了。", "还有别的吗"} {
		onText(d)
	}
	if b.hold != nil {
		select {
		case <-b.hold:
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	return "好的，客厅的灯已经打开了。还有别的吗", nil
}

// output records what the device receives.
type output struct {
	mu    sync.Mutex
	msgs  []string // JSON messages, and "audio" for each packet
	times []time.Time
	ended chan string
}

func newOutput() *output { return &output{ended: make(chan string, 1)} }

func (o *output) WriteText(_ context.Context, m []byte) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.msgs = append(o.msgs, string(m))
	o.times = append(o.times, time.Now())
	return nil
}

func (o *output) WriteAudio(_ context.Context, p []byte, _ uint32) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(p) != 2*1440 {
		panic("a downlink packet is not one 60 ms frame at 24 kHz")
	}
	o.msgs = append(o.msgs, "audio")
	o.times = append(o.times, time.Now())
	return nil
}

func (o *output) End(reason string) { o.ended <- reason }

func (o *output) snapshot() ([]string, []time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.msgs...), append([]time.Time(nil), o.times...)
}

// waitFor polls until the device has received a message containing s.
func (o *output) waitFor(t *testing.T, s string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		msgs, _ := o.snapshot()
		for _, m := range msgs {
			if strings.Contains(m, s) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the device never received %q; it got %v", s, msgs)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// summary is the messages in order, audio runs collapsed to "audio×n".
func summary(msgs []string) []string {
	var out []string
	for _, m := range msgs {
		if m == "audio" {
			if n := len(out); n > 0 && strings.HasPrefix(out[n-1], "audio×") {
				k, _ := strconv.Atoi(strings.TrimPrefix(out[n-1], "audio×"))
				out[n-1] = "audio×" + strconv.Itoa(k+1)
				continue
			}
			out = append(out, "audio×1")
			continue
		}
		var v struct{ Type, State, Text, Emotion string }
		_ = json.Unmarshal([]byte(m), &v)
		s := v.Type
		if v.State != "" {
			s += " " + v.State
		}
		if v.Emotion != "" {
			s += " " + v.Emotion
		}
		if v.Type == "stt" || v.State == "sentence_start" {
			s += " " + v.Text
		}
		out = append(out, s)
	}
	return out
}

// records collects turn records.
type records struct {
	mu  sync.Mutex
	all []TurnRecord
}

func (r *records) add(tr TurnRecord) { r.mu.Lock(); r.all = append(r.all, tr); r.mu.Unlock() }
func (r *records) last(t *testing.T) TurnRecord {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		r.mu.Lock()
		n := len(r.all)
		var tr TurnRecord
		if n > 0 {
			tr = r.all[n-1]
		}
		r.mu.Unlock()
		if n > 0 {
			return tr
		}
		if time.Now().After(deadline) {
			t.Fatal("no turn record")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func engine(t *testing.T, opts Options) *Engine {
	if opts.Codec == nil {
		opts.Codec = pcmCodec{}
	}
	e := New(opts)
	t.Cleanup(e.Close)
	return e
}

var down = protocol.DefaultDownlinkAudio

// A push-to-talk turn: what the person said is recognised, the answer is
// spoken sentence by sentence, and the device receives the firmware's
// messages in order, the audio for each sentence (60 ms per rune here),
// never faster than real time beyond the lead, and tts stop last.
func TestManualTurn(t *testing.T) {
	br := &brain{}
	var recs records
	e := engine(t, Options{Recognizer: &recognizer{}, Synthesizer: synthesizer{}, Brain: br, OnTurn: recs.add})
	out := newOutput()
	c := e.Open("aa:00:00:00:00:01", "zh", down, out)
	defer c.Close()
	c.Listen("start", "manual", "")
	for range 10 {
		c.Audio(speechFrame(500), 0)
	}
	c.Listen("stop", "", "") // Audio queues each frame before it returns: the stop comes after them
	out.waitFor(t, `"state":"stop"`)
	msgs, times := out.snapshot()
	got := strings.Join(summary(msgs), " | ")
	want := "stt 打开客厅的灯 | llm thinking | tts start | llm neutral | tts sentence_start 好的，客厅的灯已经打开了。 | audio×13 | tts sentence_start 还有别的吗 | audio×5 | tts stop"
	if got != want {
		t.Fatalf("the device received\n%s\nwant\n%s", got, want)
	}
	if br.turns[0].DeviceID != "aa:00:00:00:00:01" || br.turns[0].Text != "打开客厅的灯" {
		t.Fatalf("the brain was asked %+v", br.turns)
	}
	// The first audio waits until the device is speaking (tts start is
	// applied on its main loop; audio before that is dropped).
	var ttsStart time.Time
	for i, m := range msgs {
		if m == `{"type":"tts","state":"start"}` {
			ttsStart = times[i]
		}
		if m == "audio" {
			if times[i].Sub(ttsStart) < e.opts.SpeakingDelay {
				t.Fatalf("the first audio went %v after tts start", times[i].Sub(ttsStart))
			}
			break
		}
	}
	// Paced: audio frame k is not sent before k×60 ms minus the lead after the first.
	var first time.Time
	k := 0
	for i, m := range msgs {
		if m != "audio" {
			continue
		}
		if first.IsZero() {
			first = times[i]
		}
		if early := first.Add(time.Duration(k)*60*time.Millisecond - e.opts.Lead - 20*time.Millisecond); times[i].Before(early) {
			t.Fatalf("audio frame %d sent %v after the first: faster than real time beyond the lead", k, times[i].Sub(first))
		}
		k++
	}
	// tts stop comes once the audio has had time to play.
	if stop := times[len(times)-1]; stop.Sub(first) < time.Duration(k-1)*60*time.Millisecond {
		t.Fatalf("tts stop %v after the first frame, before %d frames could play", stop.Sub(first), k)
	}
	r := recs.last(t)
	if r.Outcome != "ok" || r.Heard != "打开客厅的灯" || r.Answer != "好的，客厅的灯已经打开了。 还有别的吗" ||
		r.FirstAudioMs < r.FirstSentenceMs || r.TotalMs < r.FirstAudioMs {
		t.Fatalf("turn record %+v", r)
	}
}

// Auto mode: the hub ends the utterance when the VAD hears silence after
// speech; frames before speech began reach the recognizer too.
func TestAutoModeEndsOnSilence(t *testing.T) {
	rec := &recognizer{}
	e := engine(t, Options{Recognizer: rec, Synthesizer: synthesizer{}, Brain: &brain{}, NewVAD: func() VAD { return &levelVAD{} }})
	out := newOutput()
	c := e.Open("aa:00:00:00:00:02", "zh", down, out)
	defer c.Close()
	c.Listen("start", "auto", "")
	for range 3 {
		c.Audio(speechFrame(0), 0) // silence before speech
	}
	for range 5 {
		c.Audio(speechFrame(500), 0)
	}
	for range 4 {
		c.Audio(speechFrame(0), 0)
	}
	out.waitFor(t, `"state":"stop"`)
	msgs, _ := out.snapshot()
	if s := summary(msgs); s[0] != "stt 打开客厅的灯" {
		t.Fatalf("turn: %v", s)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.samples < (3+5)*960 {
		t.Fatalf("the recognizer got %d samples: the frames before speech began are missing", rec.samples)
	}
}

// levelVAD: speech is any non-zero sample; an utterance ends after 3
// silent frames.
type levelVAD struct {
	speech bool
	quiet  int
}

func (v *levelVAD) Push(pcm []int16) (bool, bool) {
	if pcm[0] != 0 {
		v.speech, v.quiet = true, 0
		return true, false
	}
	if !v.speech {
		return false, false
	}
	v.quiet++
	if v.quiet >= 3 {
		v.speech = false
		return false, true
	}
	return true, false
}
func (v *levelVAD) Reset() { *v = levelVAD{} }

// Abort stops the answer at once: tts stop goes out straight away and no
// audio follows it.
func TestAbortStopsAtOnce(t *testing.T) {
	br := &brain{hold: make(chan struct{})}
	var recs records
	e := engine(t, Options{Recognizer: &recognizer{}, Synthesizer: synthesizer{}, Brain: br, OnTurn: recs.add})
	out := newOutput()
	c := e.Open("aa:00:00:00:00:03", "zh", down, out)
	defer c.Close()
	c.Listen("start", "manual", "")
	c.Audio(speechFrame(500), 0)
	c.Listen("stop", "", "")
	out.waitFor(t, "audio")
	c.Abort()
	out.waitFor(t, `"state":"stop"`)
	r := recs.last(t) // the turn is over
	c.Close()
	e.Close() // and every goroutine of the engine has ended: nothing more can reach the device
	msgs, _ := out.snapshot()
	s := summary(msgs)
	if s[len(s)-1] != "tts stop" {
		t.Fatalf("after abort the device received %v", s)
	}
	if n := strings.Count(strings.Join(s, "|"), "tts stop"); n != 1 {
		t.Fatalf("tts stop sent %d times: %v", n, s)
	}
	if r.Outcome != "aborted" {
		t.Fatalf("turn record %+v", r)
	}
}

// With no speech providers configured, a turn still ends properly: the
// device shows what to configure, with tts stop. When it listens again
// (auto mode: at once) it is not answered again (that would loop), and the
// conversation ends after the silence timeout.
func TestNotConfigured(t *testing.T) {
	e := engine(t, Options{Silence: time.Second})
	out := newOutput()
	c := e.Open("aa:00:00:00:00:04", "en", down, out)
	defer c.Close()
	c.Listen("start", "auto", "")
	c.Audio(speechFrame(500), 0)
	out.waitFor(t, `"state":"stop"`)
	c.Listen("start", "auto", "")
	c.Audio(speechFrame(500), 0)
	select {
	case <-out.ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the conversation did not end")
	}
	msgs, _ := out.snapshot()
	got := strings.Join(summary(msgs), " | ")
	if got != "tts start | llm sad | tts sentence_start Voice is not configured on this hub: set asr-provider, tts-provider, agent-provider. | tts stop" {
		t.Fatalf("the device received %s", got)
	}
}

// Provider failures end the turn with the reason in words and tts stop.
func TestProviderFailures(t *testing.T) {
	for outcome, opts := range map[string]Options{
		"recognition_failed":  {Recognizer: &recognizer{err: errors.New("connection refused")}, Synthesizer: synthesizer{}, Brain: &brain{}},
		"recognition_failed ": {Recognizer: &recognizer{finishErr: errors.New("500 Internal Server Error")}, Synthesizer: synthesizer{}, Brain: &brain{}},
		"answer_failed":       {Recognizer: &recognizer{}, Synthesizer: synthesizer{}, Brain: &brain{err: errors.New("rate limited")}},
		"speech_failed":       {Recognizer: &recognizer{}, Synthesizer: synthesizer{err: errors.New("bad voice")}, Brain: &brain{}},
	} {
		t.Run(outcome, func(t *testing.T) {
			var recs records
			opts.OnTurn = recs.add
			e := engine(t, opts)
			out := newOutput()
			c := e.Open("aa:00:00:00:00:05", "zh", down, out)
			defer c.Close()
			c.Listen("start", "manual", "")
			c.Audio(speechFrame(500), 0)
			c.Listen("stop", "", "")
			out.waitFor(t, `"state":"stop"`)
			msgs, _ := out.snapshot()
			s := strings.Join(summary(msgs), " | ")
			if !strings.Contains(s, "出错了") || !strings.HasSuffix(s, "tts stop") {
				t.Fatalf("the device received %s", s)
			}
			if r := recs.last(t); r.Outcome != strings.TrimSpace(outcome) || r.Error == "" {
				t.Fatalf("turn record %+v", r)
			}
		})
	}
}

// A conversation with no speech for the silence limit is ended.
func TestSilenceEndsTheConversation(t *testing.T) {
	e := engine(t, Options{Recognizer: &recognizer{}, Synthesizer: synthesizer{}, Brain: &brain{}, Silence: 100 * time.Millisecond})
	out := newOutput()
	c := e.Open("aa:00:00:00:00:06", "zh", down, out)
	defer c.Close()
	select {
	case r := <-out.ended:
		if !strings.Contains(r, "no speech") {
			t.Fatal(r)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("not ended")
	}
}

func TestSplitter(t *testing.T) {
	var s splitter
	var got []string
	for _, d := range []string{"好的，", "**灯**已经", "打开了。The", " price is 3.5 dollars. Done", "!", " 最后一句"} {
		got = append(got, s.push(d)...)
	}
	got = append(got, s.flush())
	want := []string{"好的，灯已经打开了。", "The price is 3.5 dollars.", "Done!", "最后一句"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("sentences %q, want %q", got, want)
	}
}

func TestFramerResamples(t *testing.T) {
	for _, in := range []int{16000, 22050, 24000, 44100, 48000} {
		f := newFramer(in, down)
		n := 0
		for range 10 { // one second in chunks of 100 ms
			for _, fr := range f.push(make([]int16, in/10)) {
				if len(fr) != 1440 {
					t.Fatalf("frame of %d samples", len(fr))
				}
				n++
			}
		}
		if f.flush() != nil {
			n++
		}
		if n < 16 || n > 17 { // one second is 16.7 frames of 60 ms
			t.Errorf("%d Hz: one second became %d frames", in, n)
		}
	}
}

// The framer hands out the pushed samples in frames, in order, across
// pushes of any size, and reuses its buffer: an answer's chunks cost no
// allocation once the buffer holds a chunk and a frame (its frames are
// valid until the next push, which is how a turn uses them).
func TestFramerReusesItsBuffer(t *testing.T) {
	f := newFramer(24000, down)
	second := make([]int16, 24000)
	for i := range second {
		second[i] = int16(i)
	}
	all, next := second, 0
	for _, n := range []int{2000, 100, 5000, 1440, 7, 15453} {
		for _, fr := range f.push(second[:n]) {
			if !slices.Equal(fr, all[next:next+1440]) {
				t.Fatalf("the frame from sample %d is not the samples pushed", next)
			}
			next += len(fr)
		}
		second = second[n:]
	}
	if next != 16*1440 {
		t.Fatalf("%d samples framed of 24000, want 16 frames", next)
	}
	if last := f.flush(); len(last) != 1440 || last[0] != 16*1440 || last[24000-16*1440-1] != 23999 || last[1439] != 0 {
		t.Fatalf("the last frame: %d samples", len(last))
	}
	chunk := make([]int16, 4800) // 200 ms, as a synthesis stream sends
	f = newFramer(24000, down)
	f.push(chunk)
	allocs := testing.AllocsPerRun(50, func() { f.push(chunk) })
	if allocs > 0 {
		t.Errorf("a chunk of an answer cost %.1f allocations", allocs)
	}
}

// In auto mode, a device that stops sending audio mid-utterance (Opus DTX
// sends nothing in silence) has its utterance ended all the same.
func TestAutoModeEndsWhenAudioStops(t *testing.T) {
	e := engine(t, Options{Recognizer: &recognizer{}, Synthesizer: synthesizer{}, Brain: &brain{}, NewVAD: func() VAD { return &levelVAD{} }})
	out := newOutput()
	c := e.Open("aa:00:00:00:00:07", "zh", down, out)
	defer c.Close()
	c.Listen("start", "auto", "")
	for range 5 {
		c.Audio(speechFrame(500), 0)
	}
	out.waitFor(t, `"state":"stop"`)
	if s := summary(func() []string { m, _ := out.snapshot(); return m }()); s[0] != "stt 打开客厅的灯" {
		t.Fatalf("turn: %v", s)
	}
}

// Realtime mode: the microphone stays open while the device speaks, and a
// person who talks over the answer interrupts it (tts stop at once) and is
// heard and answered.
func TestRealtimeBargeIn(t *testing.T) {
	br := &brain{hold: make(chan struct{})}
	var recs records
	e := engine(t, Options{Recognizer: &recognizer{}, Synthesizer: synthesizer{}, Brain: br, OnTurn: recs.add,
		NewVAD: func() VAD { return &levelVAD{} }})
	out := newOutput()
	c := e.Open("aa:00:00:00:00:08", "zh", down, out)
	defer c.Close()
	c.Listen("start", "realtime", "")
	for range 3 {
		c.Audio(speechFrame(500), 0)
	}
	for range 3 {
		c.Audio(speechFrame(0), 0)
	}
	out.waitFor(t, "audio") // the first answer is being spoken (the model is held)
	for range 3 {
		c.Audio(speechFrame(500), 0) // the person talks over it
	}
	out.waitFor(t, `"state":"stop"`)
	if r := recs.last(t); r.Outcome != "aborted" {
		t.Fatalf("the interrupted turn: %+v", r)
	}
	close(br.hold) // the next answer is not held
	for range 3 {
		c.Audio(speechFrame(0), 0)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		msgs, _ := out.snapshot()
		if strings.Count(strings.Join(summary(msgs), "|"), "stt 打开客厅的灯") == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the barge-in was not answered: %v", summary(msgs))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A device that goes away mid-turn (its conversation closed) leaves
// nothing running: the model, synthesis and pacing all end.
func TestCloseMidTurnLeavesNothingRunning(t *testing.T) {
	before := runtime.NumGoroutine()
	br := &brain{hold: make(chan struct{})}
	e := New(Options{Codec: pcmCodec{}, Recognizer: &recognizer{}, Synthesizer: synthesizer{}, Brain: br})
	out := newOutput()
	c := e.Open("aa:00:00:00:00:09", "zh", down, out)
	c.Listen("start", "manual", "")
	c.Audio(speechFrame(500), 0)
	c.Listen("stop", "", "")
	out.waitFor(t, "audio")
	c.Close()
	e.Close() // waits for every goroutine of the engine
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines left running, %d before", runtime.NumGoroutine(), before)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A device that leaves echo cancellation to the server (features.aec):
// in realtime mode the hub does not listen while it speaks, so the
// device's own voice coming back through its microphone does not
// interrupt the answer.
func TestRealtimeWithoutEchoCancellation(t *testing.T) {
	br := &brain{hold: make(chan struct{})}
	var recs records
	e := engine(t, Options{Recognizer: &recognizer{}, Synthesizer: synthesizer{}, Brain: br, OnTurn: recs.add,
		NewVAD: func() VAD { return &levelVAD{} }})
	out := newOutput()
	c := e.Open("aa:00:00:00:00:0a", "zh", down, out, EchoUncancelled())
	defer c.Close()
	c.Listen("start", "realtime", "")
	for range 3 {
		c.Audio(speechFrame(500), 0)
	}
	for range 3 {
		c.Audio(speechFrame(0), 0)
	}
	out.waitFor(t, "audio")
	for range 6 {
		c.Audio(speechFrame(500), 0) // the answer, heard back by the microphone
	}
	close(br.hold)
	out.waitFor(t, `"state":"stop"`)
	if r := recs.last(t); r.Outcome != "ok" {
		t.Fatalf("the answer was interrupted by its own echo: %+v", r)
	}
}
