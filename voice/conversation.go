package voice

import (
	"context"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"time"

	"github.com/xiaozhi-hub/hub/protocol"
)

// Conversation is one device's conversation, from its hello to its end.
//
// A conversation waiting for speech holds no goroutine of its own: the
// device session pushes the device's messages and audio into it on the
// session's read loop, which decodes each frame and runs the end-of-speech
// detector there (a frame's worth of work, about 0.1 ms: BENCHMARKS.md),
// and its silence limit is a timer. A goroutine starts
// when an utterance begins (speech heard, or a push-to-talk frame): it
// opens the recognition and streams the utterance into it as it is heard,
// then runs the turn (recognition's end, the answer, speech) and ends with
// the turn. Its methods never wait for that goroutine: audio it cannot
// take at once is dropped and counted, as the firmware's own send queue
// does.
type Conversation struct {
	e        *Engine
	deviceID string
	down     protocol.AudioParams
	out      Output
	opened   time.Time     // downlink timestamps count from it
	nextTs   atomic.Uint32 // the least timestamp the next answer's first frame may carry
	// halfDuplex: do not listen while speaking (EchoUncancelled).
	halfDuplex bool

	// language is the device's (its hello's, else its OTA check's; ""
	// when unknown): the model gets it, and recognition unless the hub
	// sets one (Options.Language). says is the language of the hub's own
	// words: language, else the hub's default, else Chinese. Both are
	// settled by the first goroutine of the conversation (resolve), off
	// the device's read loop: LanguageOf may read the store.
	language, says string
	resolved       sync.Once

	// silence ends the conversation when nothing was heard until
	// quietUntil (set by Open).
	silence *time.Timer

	mu         sync.Mutex // guards what follows: the read loop, timers and turns meet here
	ended      bool       // closed, or ended by silence
	on         bool       // between listen start and the end of the utterance
	mode       string     // auto, manual, realtime
	missing    string     // what the hub lacks to answer in speech ("" when nothing)
	answered   bool       // the not-configured answer was given
	dec        Decoder    // while audio is taken (hearing), else given back
	vad        VAD
	pre        [][]int16  // the last frames before speech began (auto, realtime)
	utt        *utterance // the utterance being heard
	t          *turn      // the answer in progress
	last       *turn      // the latest turn, until it has ended: the next utterance waits for it
	quietUntil time.Time
	// silenceFor and hubLanguage are the engine's parts as they were when
	// the conversation opened (Options.Parts).
	silenceFor  time.Duration
	hubLanguage string

	Dropped  atomic.Uint64 // uplink frames dropped (behind, or not listening)
	BadAudio atomic.Uint64 // frames that did not decode, or (not decoded) broke Opus framing
}

func newConversation(e *Engine, deviceID, language string, down protocol.AudioParams, out Output) *Conversation {
	parts := e.parts(deviceID)
	c := &Conversation{e: e, deviceID: deviceID, language: language, down: down, out: out, opened: time.Now(),
		missing: e.missing(parts), silenceFor: parts.Silence, hubLanguage: parts.Language}
	c.quietUntil = c.opened.Add(c.silenceFor)
	return c
}

// resolve settles the conversation's languages, once, on a goroutine of
// the conversation.
func (c *Conversation) resolve() {
	c.resolved.Do(func() {
		if c.language == "" && c.e.opts.LanguageOf != nil {
			c.language = c.e.opts.LanguageOf(c.deviceID)
		}
		c.says = c.language
		if c.says == "" {
			c.says = c.hubLanguage
		}
	})
}

// goOwned runs f on a goroutine owned by the Engine, once the
// conversation's languages are settled. It and the goroutines it starts
// carry the pprof label voice=turn: goroutine profiles show how many
// conversations are being spoken in or answered.
func (c *Conversation) goOwned(f func()) {
	c.e.wg.Add(1)
	go pprof.Do(c.e.ctx, pprof.Labels("voice", "turn"), func(context.Context) {
		defer c.e.wg.Done()
		c.resolve()
		f()
	})
}

// Listen hands over a listen message (state start/stop/detect, its mode
// and text).
func (c *Conversation) Listen(state, mode, _ string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended {
		return
	}
	switch state {
	case "start":
		if c.missing != "" {
			// The first turn says what to configure, and ends with tts
			// stop. The device then listens again (auto mode re-sends
			// listen start at once, and legacy firmware after every IoT
			// command): answering each would loop, and ending the
			// conversation would cut off the device's control, so later
			// ones are left alone until the silence timeout ends the
			// conversation, as for any conversation nobody talks in.
			if !c.answered && c.t == nil {
				c.answered = true
				t, missing := c.newTurn(c.e.ctx), c.missing
				c.t = t
				c.goOwned(func() {
					t.run(func(ctx context.Context) { c.say(ctx, t, notConfigured(c.says, missing), "not_configured", nil) })
				})
			}
			return
		}
		c.on, c.mode = true, mode
		if c.mode == "" {
			c.mode = "auto"
		}
		if c.vad == nil && c.e.opts.NewVAD != nil {
			c.vad = c.e.opts.NewVAD()
		}
		if c.vad != nil {
			c.vad.Reset()
		}
	case "stop":
		if c.on && c.mode == "manual" && c.t == nil {
			if c.utt == nil {
				c.startUtterance(time.Now(), c.e.parts(c.deviceID), false)
			}
			c.endUtterance()
		}
		c.on = false
		c.settle()
	}
}

// Abort hands over the device's abort: the answer stops at once.
func (c *Conversation) Abort() {
	c.mu.Lock()
	t := c.t
	c.mu.Unlock()
	if t != nil {
		t.abort()
	}
}

// Audio hands over one uplink Opus frame. It is decoded at once, or, for a
// recognition that takes Opus, copied (the transport may reuse its buffer
// afterwards).
func (c *Conversation) Audio(opus []byte, _ uint32) {
	c.mu.Lock()
	interrupted := c.hear(opus)
	c.mu.Unlock()
	if interrupted != nil {
		interrupted.abort() // realtime: the person talks over the answer
	}
}

// Close ends the conversation (the device said goodbye or went away) and
// cancels a turn in progress. It does not wait.
func (c *Conversation) Close() {
	c.mu.Lock()
	t := c.end()
	c.mu.Unlock()
	if t != nil {
		t.cancel()
	}
}

// end marks the conversation ended and abandons the utterance being
// heard; it returns the turn in progress, to be cancelled by the caller
// once c.mu is released. c.mu is held.
func (c *Conversation) end() *turn {
	if c.ended {
		return nil
	}
	c.ended = true
	c.e.active.Add(-1)
	c.silence.Stop()
	if u := c.utt; u != nil {
		c.utt = nil
		u.abandon()
	}
	t := c.t
	c.t = nil
	c.settle()
	return t
}

// silent runs when the silence timer fires: it ends the conversation if
// nothing was heard since, and otherwise waits for the rest of the time.
func (c *Conversation) silent() {
	c.mu.Lock()
	if c.ended || c.e.ctx.Err() != nil {
		c.mu.Unlock()
		return
	}
	if left := time.Until(c.quietUntil); left > 0 {
		c.silence.Reset(left)
		c.mu.Unlock()
		return
	}
	t := c.end()
	c.mu.Unlock()
	c.out.End("no speech for " + c.silenceFor.String())
	if t != nil {
		t.cancel()
	}
}

// heard pushes the silence limit back from now. c.mu is held.
func (c *Conversation) heard(now time.Time) { c.quietUntil = now.Add(c.silenceFor) }
