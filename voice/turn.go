package voice

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// turn is one answer in progress: recognition's end, the model, speech
// synthesis and paced audio, run by a goroutine of the conversation (the
// utterance's, or one started for a turn of its own). It always ends with
// tts stop: at once when aborted, else after the last audio has had time
// to play.
type turn struct {
	ctx     context.Context // bounded by MaxTurn
	cancel  context.CancelFunc
	done    chan struct{} // closed when run returns
	c       *Conversation
	aborted atomic.Bool

	mu      sync.Mutex // orders audio and the final tts stop
	stopped bool       // tts stop was sent: nothing may follow it

	// The record, written by the turn's goroutine only (and read once it
	// is done); start is the end of the utterance.
	rec        TurnRecord
	start      time.Time
	firstAudio time.Time
	ttsStart   time.Time // when tts start was sent
}

// newTurn makes a turn that starts now, the conversation's latest; run
// runs it. c.mu is held.
func (c *Conversation) newTurn(parent context.Context) *turn {
	ctx, cancel := context.WithTimeout(parent, c.e.opts.MaxTurn)
	t := &turn{ctx: ctx, cancel: cancel, done: make(chan struct{}), c: c, start: time.Now()}
	t.rec.DeviceID = c.deviceID
	c.last = t
	return t
}

// abort stops the answer at once and tells the device (tts stop), without
// waiting for the turn's goroutine to notice; no audio follows. The
// context is cancelled first, so that an audio write in progress ends
// before tts stop is written.
func (t *turn) abort() {
	t.aborted.Store(true)
	t.cancel()
	t.stop()
}

// stop sends tts stop, once.
func (t *turn) stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.stopped {
		t.stopped = true
		t.c.write(context.Background(), ttsMessage("stop"))
	}
}

// audio sends one packet, stamped with its play-out time, unless the turn
// was stopped.
func (t *turn) audio(ctx context.Context, pkt []byte, timestampMs uint32) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return context.Canceled
	}
	if t.firstAudio.IsZero() {
		t.firstAudio = time.Now()
	}
	return t.c.out.WriteAudio(ctx, pkt, timestampMs)
}

// since is the time from the turn's start, in milliseconds.
func (t *turn) since(at time.Time) float64 {
	if at.IsZero() {
		return 0
	}
	return float64(at.Sub(t.start).Microseconds()) / 1000
}

// fail records the stage that failed.
func (t *turn) fail(outcome string, err error) {
	if t.rec.Outcome == "" || t.rec.Outcome == "ok" {
		t.rec.Outcome, t.rec.Error = outcome, err.Error()
	}
}

// run runs the turn's body on the calling goroutine, then ends the turn:
// the conversation listens again (before tts stop, so that a device that
// listens at once is heard), tts stop, the record.
func (t *turn) run(body func(ctx context.Context)) {
	c := t.c
	body(t.ctx)
	c.mu.Lock()
	if c.t == t {
		c.t = nil
	}
	if !c.ended {
		c.heard(time.Now())
	}
	c.mu.Unlock()
	t.stop()
	t.mu.Lock()
	first := t.firstAudio
	t.mu.Unlock()
	switch {
	case t.aborted.Load():
		t.rec.Outcome = "aborted"
	case t.rec.Outcome == "" && t.ctx.Err() != nil:
		t.rec.Outcome = "timeout"
	case t.rec.Outcome == "":
		t.rec.Outcome = "ok"
	}
	t.rec.FirstAudioMs = t.since(first)
	t.rec.TotalMs = t.since(time.Now())
	if c.e.opts.OnTurn != nil {
		c.e.opts.OnTurn(t.rec)
	}
	t.cancel()
	close(t.done)
	c.mu.Lock()
	if c.last == t {
		c.last = nil // an ended turn is not kept
	}
	c.mu.Unlock()
}

// say answers with a text only (no speech): what the device shows when a
// turn cannot be spoken (outcome says why, for the record).
func (c *Conversation) say(ctx context.Context, t *turn, text, outcome string, cause error) {
	t.rec.Answer, t.rec.Outcome = text, outcome
	if cause != nil {
		t.rec.Error = cause.Error()
	}
	c.write(ctx, ttsMessage("start"))
	if text != "" {
		c.write(ctx, llmMessage("sad"))
		c.write(ctx, sentenceMessage(text))
	}
}

// reply finishes the recognition of rec and answers what was said.
func (c *Conversation) reply(ctx context.Context, t *turn, rec Recognition) {
	text, err := rec.Finish(ctx)
	rec.Close()
	t.rec.Heard, t.rec.RecognitionMs = text, t.since(time.Now())
	if err != nil {
		t.fail("recognition_failed", err)
		if ctx.Err() == nil {
			c.e.log.Warn("speech recognition failed", "device", c.deviceID, "err", err)
			c.write(ctx, sttMessage(""))
			c.speakText(ctx, t, failed(c.says, "recognition", err))
		}
		return
	}
	c.write(ctx, sttMessage(text))
	if text == "" {
		t.rec.Outcome = "empty"
		c.write(ctx, ttsMessage("start")) // nothing was said: an empty answer ends the turn
		return
	}
	c.answer(ctx, t, text)
}

// answer runs the model on text, speaking each sentence as soon as it is
// complete while the model goes on.
func (c *Conversation) answer(ctx context.Context, t *turn, text string) {
	c.write(ctx, llmMessage("thinking"))
	c.write(ctx, ttsMessage("start"))
	t.ttsStart = time.Now()
	sentences := make(chan string, 16)
	var answerErr error
	c.e.wg.Add(1)
	go func() {
		defer c.e.wg.Done()
		defer close(sentences)
		var sp splitter
		emit := func(s string) {
			select {
			case sentences <- s:
			case <-ctx.Done():
			}
		}
		_, err := c.e.opts.Brain.Answer(ctx, Turn{DeviceID: c.deviceID, Language: c.language, Text: text}, func(delta string) {
			for _, s := range sp.push(delta) {
				emit(s)
			}
		})
		if rest := sp.flush(); rest != "" {
			emit(rest)
		}
		if err != nil && ctx.Err() == nil {
			answerErr = err
			emit(failed(c.says, "answer", err))
		}
	}()
	d := c.newDownlink(t)
	first := true
	for s := range sentences {
		if ctx.Err() != nil {
			continue // drain: the model goroutine ends with ctx
		}
		if first {
			c.write(ctx, llmMessage("neutral"))
			t.rec.FirstSentenceMs = t.since(time.Now())
			first = false
		}
		if t.rec.Answer != "" {
			t.rec.Answer += " "
		}
		t.rec.Answer += s
		c.write(ctx, sentenceMessage(s))
		if err := c.speak(ctx, t, d, s); err != nil && ctx.Err() == nil {
			t.fail("speech_failed", err)
			c.e.log.Warn("speech synthesis failed", "device", c.deviceID, "err", err)
			c.write(ctx, sentenceMessage(failed(c.says, "speech", err)))
		}
	}
	if answerErr != nil {
		t.fail("answer_failed", answerErr)
		c.e.log.Warn("answer failed", "device", c.deviceID, "err", answerErr)
	}
	d.p.drain(ctx) // tts stop only once the device has played what it was sent
}

// speakText speaks one text outside the model's answer (a failure).
func (c *Conversation) speakText(ctx context.Context, t *turn, text string) {
	c.write(ctx, ttsMessage("start"))
	t.ttsStart = time.Now()
	c.write(ctx, llmMessage("sad"))
	c.write(ctx, sentenceMessage(text))
	d := c.newDownlink(t)
	if err := c.speak(ctx, t, d, text); err == nil {
		d.p.drain(ctx)
	}
}

func (c *Conversation) write(ctx context.Context, msg []byte) {
	if err := c.out.WriteText(ctx, msg); err != nil && ctx.Err() == nil {
		c.e.log.Debug("write to device", "device", c.deviceID, "err", err)
	}
}
