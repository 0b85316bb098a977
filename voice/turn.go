package voice

import (
	"context"
	"errors"
	"io"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/xiaozhi-hub/hub/protocol"
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
	d := c.newDownlink(ctx, t)
	first := true
	for s := range sentences {
		if ctx.Err() != nil || d.broken.Load() {
			continue // drain: the model goroutine ends with ctx; a device that takes no audio is not spoken to
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
		d.put(ctx, queued{text: sentenceMessage(s)})
		if err := c.speak(ctx, d, s); err != nil && ctx.Err() == nil {
			t.fail("speech_failed", err)
			c.e.log.Warn("speech synthesis failed", "device", c.deviceID, "err", err)
			d.put(ctx, queued{text: sentenceMessage(failed(c.says, "speech", err))})
		}
		d.put(ctx, queued{end: true})
	}
	if answerErr != nil {
		t.fail("answer_failed", answerErr)
		c.e.log.Warn("answer failed", "device", c.deviceID, "err", answerErr)
	}
	d.finish(ctx) // tts stop only once the device has played what it was sent
}

// speakText speaks one text outside the model's answer (a failure).
func (c *Conversation) speakText(ctx context.Context, t *turn, text string) {
	c.write(ctx, ttsMessage("start"))
	t.ttsStart = time.Now()
	c.write(ctx, llmMessage("sad"))
	c.write(ctx, sentenceMessage(text))
	d := c.newDownlink(ctx, t)
	if err := c.speak(ctx, d, text); err != nil && ctx.Err() == nil {
		c.e.log.Warn("speech synthesis failed", "device", c.deviceID, "err", err)
	}
	d.finish(ctx)
}

// downlink is the audio of one answer, from tts start to tts stop. The
// turn's goroutine synthesises and encodes it as fast as synthesis brings
// the speech, with ONE Opus encoder for all its sentences: the firmware
// resets its decoder at tts start only (not at sentence_start), so a
// fresh encoder for each sentence would meet a decoder that goes on from
// the previous sentence: a click, up to full scale, at every sentence
// boundary (docs/protocol.md §7.2). A goroutine of the answer's, send,
// writes the packets paced, with the sentences' texts between them in
// order. The encoder goes back to the codec once the last sentence is
// encoded, not once the device has played it: an answer holds an encoder
// (hundreds of KB with gopus) for the time its synthesis takes, and the
// packets (a few hundred bytes each) for the time they take to play.
type downlink struct {
	t       *turn
	p       *pacer
	enc     Encoder       // made by the first sentence spoken
	encoded int           // packets the answer has so far
	q       chan queued   // what send writes, in order
	done    chan struct{} // closed when send returns
	// err is send's first failed write; broken is set once it is, for the
	// turn to stop synthesising for a device that takes no audio.
	err    error
	broken atomic.Bool
}

// queued is what the downlink sends next: a message, an audio packet, or
// the end of a sentence.
type queued struct {
	text, pkt []byte
	end       bool
}

// queueLen bounds the packets an answer keeps ahead of the device (with
// its texts): 64 frames of 60 ms, 3.8 s of audio; a synthesis further
// ahead waits, as it did when it was encoded at the pace of playback.
const queueLen = 64

// startFrames is how many frames an answer starts with at once: 180 ms
// the device has in hand before the pacing begins.
const startFrames = 3

func (c *Conversation) newDownlink(ctx context.Context, t *turn) *downlink {
	p := newPacer(c.down, c.e.opts.Lead, t.ttsStart.Add(c.e.opts.SpeakingDelay), c.opened)
	p.next = &c.nextTs
	d := &downlink{t: t, p: p, q: make(chan queued, queueLen), done: make(chan struct{})}
	c.e.wg.Add(1)
	go func() {
		defer c.e.wg.Done()
		defer close(d.done)
		d.send(ctx, c)
	}()
	return d
}

// put queues what send writes next; it waits while the queue is full,
// and gives up with ctx.
func (d *downlink) put(ctx context.Context, q queued) {
	select {
	case d.q <- q:
	case <-ctx.Done():
	}
}

// finish gives the encoder back (the answer is encoded), waits for send
// to write what is queued, then for the device to play it.
func (d *downlink) finish(ctx context.Context) {
	if d.enc != nil {
		release(d.enc)
		d.enc = nil
	}
	close(d.q)
	<-d.done
	if d.err != nil && ctx.Err() == nil {
		d.t.fail("speech_failed", d.err)
	}
	d.p.drain(ctx)
}

// send writes what is queued until the queue is closed. The answer's
// first packets are held until startFrames are in hand (or the sentence
// ends): the device plays from its first frame on, so an answer that
// starts with one frame runs dry when the next is late, as it is when
// many answers compete for the CPU. Once ctx ends it only empties the
// queue.
func (d *downlink) send(ctx context.Context, c *Conversation) {
	var held [][]byte
	started := false
	audio := func(pkt []byte) {
		if d.err != nil {
			return
		}
		ts, err := d.p.wait(ctx)
		if err == nil {
			err = d.t.audio(ctx, pkt, ts)
		}
		if err != nil && ctx.Err() == nil {
			d.err = err
			d.broken.Store(true)
		}
	}
	start := func() {
		started = true
		for _, pkt := range held {
			audio(pkt)
		}
		held = nil
	}
	for q := range d.q {
		if ctx.Err() != nil {
			continue
		}
		switch {
		case q.pkt != nil && !started:
			if held = append(held, q.pkt); len(held) >= startFrames {
				start()
			}
		case q.pkt != nil:
			audio(q.pkt)
		case q.end:
			if !started && len(held) > 0 {
				start() // a sentence shorter than startFrames
			}
		default:
			c.write(ctx, q.text)
		}
	}
}

// speak synthesises text and queues it as Opus frames, encoded as the
// speech arrives.
func (c *Conversation) speak(ctx context.Context, d *downlink, text string) error {
	parts := c.e.parts(c.deviceID)
	if parts.Synthesizer == nil {
		return nil
	}
	voice := parts.Voice
	if c.e.opts.VoiceOf != nil {
		if v := c.e.opts.VoiceOf(c.deviceID); v != "" {
			voice = v
		}
	}
	sp, err := parts.Synthesizer.Synthesize(ctx, text, voice)
	if err != nil {
		return err
	}
	defer sp.Close()
	if d.enc == nil {
		if d.enc, err = c.e.opts.Codec.NewEncoder(c.down.SampleRate, c.down.FrameDuration); err != nil {
			return err
		}
	}
	fr := newFramer(sp.SampleRate(), c.down)
	encode := func(pcm []int16) error {
		if d.broken.Load() {
			return d.err
		}
		pkt, err := d.enc.Encode(pcm)
		if err != nil {
			return err
		}
		d.put(ctx, queued{pkt: pkt})
		if d.encoded++; d.encoded > startFrames {
			// The device will not need this frame for a while: other
			// answers' first frames, which a device is waiting for, go
			// first (50 answers that start together would otherwise
			// queue behind each other's whole answers).
			runtime.Gosched()
		}
		return ctx.Err()
	}
	for {
		chunk, err := sp.Read(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		for _, f := range fr.push(chunk) {
			if err := encode(f); err != nil {
				return err
			}
		}
	}
	if f := fr.flush(); f != nil {
		return encode(f)
	}
	return nil
}

func (c *Conversation) write(ctx context.Context, msg []byte) {
	if err := c.out.WriteText(ctx, msg); err != nil && ctx.Err() == nil {
		c.e.log.Debug("write to device", "device", c.deviceID, "err", err)
	}
}

// pacer sends audio no faster than real time beyond a lead: the first
// frames go at once (the device starts playing with a small buffer), then
// one per frame duration. The device queues at most 40 packets and drops
// the rest.
type pacer struct {
	frame     time.Duration
	lead      time.Duration
	epoch     time.Time     // of the conversation: timestamps count from it
	notBefore time.Time     // no audio before this (speakingDelay after tts start)
	start     time.Time     // when the first frame went
	sent      time.Duration // audio sent so far
	base      uint32        // the first frame's timestamp
	// next, when set, is the conversation's: an answer cut short (audio
	// goes out ahead of time) is followed by one whose timestamps still
	// come after its last.
	next *atomic.Uint32
}

func newPacer(down protocol.AudioParams, lead time.Duration, notBefore, epoch time.Time) *pacer {
	return &pacer{frame: time.Duration(down.FrameDuration) * time.Millisecond, lead: lead, notBefore: notBefore, epoch: epoch}
}

// wait blocks until the next frame may go, and returns the frame's
// timestamp: when the device plays it, in milliseconds from the start of
// the conversation, one frame duration after the previous frame's. The
// firmware built with server echo cancellation hands the timestamp of the
// frame it is playing back with its microphone's next frame, and ignores
// a timestamp of 0, so it is never 0 and never repeats within a
// conversation (docs/protocol.md §7.4).
func (p *pacer) wait(ctx context.Context) (uint32, error) {
	now := time.Now()
	if p.start.IsZero() {
		p.start = now
		if p.notBefore.After(now) {
			p.start = p.notBefore
		}
		p.base = uint32(max(1, p.start.Sub(p.epoch).Milliseconds()))
		if p.next != nil {
			p.base = max(p.base, p.next.Load())
		}
	}
	ts := p.base + uint32(p.sent.Milliseconds())
	if p.next != nil {
		p.next.Store(ts + uint32(p.frame.Milliseconds()))
	}
	ahead := p.sent - now.Sub(p.start)
	p.sent += p.frame
	wait := ahead - p.lead
	if now.Before(p.start) { // the first frame waits for the device to be speaking
		wait = p.start.Sub(now)
	}
	if wait <= 0 {
		return ts, nil
	}
	tm := time.NewTimer(wait)
	defer tm.Stop()
	select {
	case <-tm.C:
		return ts, nil
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// drain waits until the device has played everything sent.
func (p *pacer) drain(ctx context.Context) {
	if p.start.IsZero() {
		return
	}
	left := p.sent - time.Since(p.start) + 2*p.frame
	if left <= 0 {
		return
	}
	tm := time.NewTimer(left)
	defer tm.Stop()
	select {
	case <-tm.C:
	case <-ctx.Done():
	}
}
