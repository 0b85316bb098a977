package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/xiaozhi-hub/hub/opus"
	"github.com/xiaozhi-hub/hub/sim"
)

// uplinkFrame is the firmware's microphone frame (docs/protocol.md §7.1),
// downlinkFrame the hub's answer frame (the hello's frame_duration).
const (
	uplinkFrame   = 60 * time.Millisecond
	downlinkFrame = 60 * time.Millisecond
	speechFrames  = 20 // 1.2 s of speech per turn
)

// spokenTone is 1.2 s of a voice-like tone as the firmware sends it: Opus,
// 16 kHz, 60 ms frames (the speech of server/talk_e2e_test.go's
// TestTalkOverWebSocket, with the repository's pure-Go encoder).
func spokenTone() ([][]byte, error) {
	enc, err := opus.NewEncoder(16000, 60)
	if err != nil {
		return nil, err
	}
	frames := make([][]byte, 0, speechFrames)
	for n := range speechFrames {
		pcm := make([]int16, 960)
		for i := range pcm {
			x := float64(n*960+i) / 16000
			pcm[i] = int16(5000 * (math.Sin(2*math.Pi*180*x) + 0.5*math.Sin(2*math.Pi*360*x)))
		}
		pkt, err := enc.Encode(pcm)
		if err != nil {
			return nil, err
		}
		frames = append(frames, pkt)
	}
	return frames, nil
}

// turnRecord is one turn as its device lived it: when the button was
// released (listen stop sent), when each audio frame of the answer
// arrived, and whether the messages came in the order the firmware needs
// (stt, tts start, sentence_start, audio, tts stop: docs/protocol.md §5.3,
// §6).
type turnRecord struct {
	stop       time.Time
	frames     []time.Time
	phase      int // 0 nothing yet, 1 stt, 2 tts start, 3 sentence_start, 4 tts stop
	misordered int // messages out of that order
}

// text notes a text message of the turn.
func (t *turnRecord) text(typ, state string) {
	next := 0
	switch {
	case typ == "stt":
		next = 1
	case typ == "tts" && state == "start":
		next = 2
	case typ == "tts" && state == "sentence_start":
		next = 3
	case typ == "tts" && state == "stop":
		next = 4
	default:
		return // llm (the face) and anything else may come at any time
	}
	// A second sentence_start is in order; anything else must move on.
	if next < t.phase || next == t.phase && next != 3 || next == 4 && t.phase < 2 {
		t.misordered++
	}
	t.phase = max(t.phase, next)
}

// audio notes an audio frame arriving at at.
func (t *turnRecord) audio(at time.Time) {
	if t.phase != 3 {
		t.misordered++ // before the sentence's subtitle or after tts stop
	}
	t.frames = append(t.frames, at)
}

// dryAt reports where an answer whose frames arrived at these times had
// its first audible gap: the device plays from the first frame on, one
// frame per period, and the answer ran dry when a frame arrived after the
// one before it had finished playing (BenchmarkTurns' definition,
// voice/bench_test.go). It returns that frame's index, or 0 if the answer
// never ran dry.
func dryAt(arrivals []time.Time, period time.Duration) int {
	for k := 1; k < len(arrivals); k++ {
		if arrivals[k].Sub(arrivals[0]) > time.Duration(k)*period {
			return k
		}
	}
	return 0
}

// turnOutcome is what a finished turn adds to the figures.
type turnOutcome struct {
	firstAudio time.Duration // listen stop → first audio frame
	frames     int
	dryAt      int // the first frame that came after the one before had played (0: none)
	misordered int
}

func (t *turnRecord) outcome() (turnOutcome, error) {
	if t.phase != 4 {
		return turnOutcome{}, errors.New("no tts stop")
	}
	if len(t.frames) == 0 {
		return turnOutcome{}, errors.New("an answer without audio")
	}
	return turnOutcome{firstAudio: t.frames[0].Sub(t.stop), frames: len(t.frames),
		dryAt: dryAt(t.frames, downlinkFrame), misordered: t.misordered}, nil
}

// talker is a push-to-talk device (firmware 2.x, WebSocket, manual
// listening mode: docs/protocol.md §6) that records its turns.
type talker struct {
	dev     *sim.Device
	speech  [][]byte
	mu      sync.Mutex
	cur     *turnRecord   // the turn in progress; nil between turns
	stopped chan struct{} // tts stop of the turn in progress
}

func newTalker(cfg sim.Config, speech [][]byte) *talker {
	t := &talker{speech: speech, stopped: make(chan struct{}, 1)}
	cfg.OnText = t.onText
	cfg.OnAudio = t.onAudio
	t.dev = sim.New(cfg)
	return t
}

// onText runs on the device's read loop.
func (t *talker) onText(data []byte) {
	var m struct{ Type, State string }
	if json.Unmarshal(data, &m) != nil {
		return
	}
	t.mu.Lock()
	if t.cur != nil {
		t.cur.text(m.Type, m.State)
	}
	t.mu.Unlock()
	if m.Type == "tts" && m.State == "stop" {
		select {
		case t.stopped <- struct{}{}:
		default:
		}
	}
}

// onAudio runs on the device's read loop.
func (t *talker) onAudio([]byte) {
	now := time.Now()
	t.mu.Lock()
	if t.cur != nil {
		t.cur.audio(now)
	}
	t.mu.Unlock()
}

// turn presses the button at start, speaks 1.2 s paced as the microphone
// is, releases it and waits for the answer's tts stop (at most timeout).
func (t *talker) turn(ctx context.Context, start time.Time, timeout time.Duration) (turnOutcome, error) {
	if err := sleepUntil(ctx, start); err != nil {
		return turnOutcome{}, err
	}
	select { // a late tts stop of an earlier turn
	case <-t.stopped:
	default:
	}
	rec := &turnRecord{}
	t.mu.Lock()
	t.cur = rec
	t.mu.Unlock()
	defer func() { t.mu.Lock(); t.cur = nil; t.mu.Unlock() }()
	if err := t.dev.SendListenStart(ctx, "manual"); err != nil {
		return turnOutcome{}, err
	}
	for k, f := range t.speech {
		if err := sleepUntil(ctx, start.Add(time.Duration(k+1)*uplinkFrame)); err != nil {
			return turnOutcome{}, err
		}
		if err := t.dev.SendAudio(ctx, 0, f); err != nil {
			return turnOutcome{}, err
		}
	}
	t.mu.Lock()
	rec.stop = time.Now()
	t.mu.Unlock()
	if err := t.dev.SendListenStop(ctx); err != nil {
		return turnOutcome{}, err
	}
	wait := time.NewTimer(timeout)
	defer wait.Stop()
	select {
	case <-t.stopped:
	case <-wait.C:
		return turnOutcome{}, fmt.Errorf("no tts stop within %v", timeout)
	case <-ctx.Done():
		return turnOutcome{}, ctx.Err()
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return rec.outcome()
}

// sleepUntil waits until at or until ctx ends.
func sleepUntil(ctx context.Context, at time.Time) error {
	d := time.Until(at)
	if d <= 0 {
		return ctx.Err()
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
