package voice

import (
	"context"
	"math"
	"runtime"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/xiaozhi-hub/hub/opus"
	"github.com/xiaozhi-hub/hub/vad"
)

// opusCodec is the hub's codec (package opus, its coders reused), behind
// the voice interfaces.
type opusCodec = opus.Codec

// quietOutput counts what a device would receive, and signals each tts
// stop. It plays as a device does: from the answer's first frame on, one
// frame every 60 ms; an answer whose next frame arrives after the one
// before has finished playing ran dry (an audible gap).
type quietOutput struct {
	mu     sync.Mutex
	frames int       // audio frames of the answer in progress
	first  time.Time // when its first frame arrived
	dry    bool      // it ran dry
	dries  int       // answers that ran dry
	stops  chan struct{}
}

func (o *quietOutput) WriteText(_ context.Context, m []byte) error {
	if string(m) == `{"type":"tts","state":"stop"}` {
		o.mu.Lock()
		if o.dry {
			o.dries++
		}
		o.frames, o.dry = 0, false
		o.mu.Unlock()
		o.stops <- struct{}{}
	}
	return nil
}
func (o *quietOutput) WriteAudio(context.Context, []byte, uint32) error {
	now := time.Now()
	o.mu.Lock()
	if o.frames == 0 {
		o.first = now
	} else if now.Sub(o.first) > time.Duration(o.frames)*time.Duration(down.FrameDuration)*time.Millisecond {
		o.dry = true
	}
	o.frames++
	o.mu.Unlock()
	return nil
}
func (o *quietOutput) End(string) {}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkTurns runs spoken turns through the whole engine with the real
// Opus codec and VAD and instant stand-in providers (recognition, a
// one-sentence answer, one second of synthesised speech): 1.2 s of speech
// in, decoded; one second out, encoded and paced. It reports the hub's own
// time from the end of speech to the first audio frame out (the deliberate
// wait for the device to be speaking is off, except in the wait=150ms
// runs), the answers that ran dry at the device, the CPU of one turn, the
// turns one core could hold concurrently in real time, and the memory of
// an open conversation. talkers=N runs N conversations at once, their
// turns ending in the same instant.
//
//	go test -run NONE -bench Turns -benchtime 200x ./voice
func BenchmarkTurns(b *testing.B) {
	for _, talkers := range []int{1, 50} {
		b.Run("talkers="+itoa(talkers), func(b *testing.B) { benchTurns(b, talkers, -1) })
	}
	b.Run("talkers=50/wait=150ms", func(b *testing.B) { benchTurns(b, 50, 150*time.Millisecond) })
}

func itoa(n int) string { return string(rune('0'+n/10%10)) + string(rune('0'+n%10)) }

func benchTurns(b *testing.B, talkers int, wait time.Duration) {
	enc, _ := opus.NewEncoder(16000, 60)
	var speech [][]byte
	for n := range 20 {
		pcm := make([]int16, 960)
		for i := range pcm {
			pcm[i] = int16(5000 * math.Sin(2*math.Pi*180*float64(n*960+i)/16000))
		}
		pkt, _ := enc.Encode(pcm)
		speech = append(speech, pkt)
	}
	var mu sync.Mutex
	var firstAudio []float64
	e := New(Options{Codec: opusCodec{}, Recognizer: &recognizer{}, Synthesizer: secondOfSpeech{}, Brain: &oneSentence{},
		NewVAD: func() VAD { return vad.NewEnergy(vad.Config{}) }, SpeakingDelay: wait,
		OnTurn: func(r TurnRecord) { mu.Lock(); firstAudio = append(firstAudio, r.FirstAudioMs); mu.Unlock() }})
	defer e.Close()
	var ms0, ms1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms0)
	convs := make([]*Conversation, talkers)
	outs := make([]*quietOutput, talkers)
	for i := range convs {
		outs[i] = &quietOutput{stops: make(chan struct{}, 1)}
		convs[i] = e.Open("aa:00:00:00:00:01", "zh", down, outs[i])
	}
	runtime.GC()
	runtime.ReadMemStats(&ms1)
	perConv := float64(ms1.HeapInuse+ms1.StackInuse-ms0.HeapInuse-ms0.StackInuse) / float64(talkers) / 1024
	cpu0 := cpuTime()
	b.ResetTimer()
	for range b.N {
		var wg sync.WaitGroup
		for i, c := range convs {
			wg.Go(func() {
				o := outs[i]
				c.Listen("start", "manual", "")
				for _, f := range speech {
					c.Audio(f, 0)
				}
				c.Listen("stop", "", "")
				<-o.stops
			})
		}
		wg.Wait()
	}
	b.StopTimer()
	for _, c := range convs {
		c.Close()
	}
	cpu := cpuTime() - cpu0
	b.ReportMetric(perConv, "KB/conversation")
	turns := b.N * talkers
	perTurn := cpu / time.Duration(turns)
	b.ReportMetric(float64(perTurn.Microseconds())/1000, "cpu-ms/turn")
	// A turn is 1.2 s of listening and 1 s of speaking: one core holds
	// this many talkers in real time.
	b.ReportMetric(2.2e3/float64(perTurn.Microseconds())*1000, "talkers/core")
	dries := 0
	for _, o := range outs {
		dries += o.dries
	}
	b.ReportMetric(float64(dries)/float64(turns)*100, "dry-answers-%")
	mu.Lock()
	slices.Sort(firstAudio)
	if n := len(firstAudio); n > 0 {
		b.ReportMetric(firstAudio[n/2], "first-audio-p50-ms")
		b.ReportMetric(firstAudio[(n*99)/100], "first-audio-p99-ms")
	}
	mu.Unlock()
}

// oneSentence answers at once.
type oneSentence struct{}

func (oneSentence) Ready() error { return nil }
func (*oneSentence) Answer(_ context.Context, _ Turn, onText func(string)) (string, error) {
	onText("好的。")
	return "好的。", nil
}

// secondOfSpeech synthesises one second of 24 kHz speech for any text.
type secondOfSpeech struct{}

func (secondOfSpeech) Synthesize(context.Context, string, string) (Speech, error) {
	return &speech{left: 24000}, nil
}

// BenchmarkListening is the work a listening device's frame costs the
// session's read loop while nobody speaks (auto mode): decoding the Opus
// frame (60 ms of a quiet room, 16 kHz) and the VAD, with the real codec
// and detector.
//
//	go test -run NONE -bench Listening ./voice
func BenchmarkListening(b *testing.B) {
	enc, _ := opus.NewEncoder(16000, 60)
	var room [][]byte
	for n := range 50 {
		pcm := make([]int16, 960)
		for i := range pcm {
			pcm[i] = int16(30 * math.Sin(2*math.Pi*1234*float64(n*960+i)/16000))
		}
		pkt, _ := enc.Encode(pcm)
		room = append(room, pkt)
	}
	e := New(Options{Codec: opusCodec{}, Recognizer: &recognizer{}, Synthesizer: secondOfSpeech{}, Brain: &oneSentence{},
		NewVAD: func() VAD { return vad.NewEnergy(vad.Config{}) }})
	defer e.Close()
	c := e.Open("aa:00:00:00:00:01", "zh", down, &quietOutput{stops: make(chan struct{}, 1)})
	defer c.Close()
	c.Listen("start", "auto", "")
	i := 0
	for b.Loop() {
		c.Audio(room[i%len(room)], 0)
		i++
	}
	if c.utt != nil || c.t != nil {
		b.Fatal("the room was taken for speech")
	}
}
