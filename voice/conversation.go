package voice

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/xiaozhi-hub/hub/protocol"
)

// Conversation is one device's conversation, from its hello to its end.
// Its methods hand events to the conversation's goroutine and never block
// the caller (the device's read loop): uplink audio that the conversation
// cannot take at once is dropped and counted, as the firmware's own send
// queue does.
type Conversation struct {
	e        *Engine
	deviceID string
	// language is the device's (its hello's, else its OTA check's; ""
	// when unknown): the model gets it, and recognition unless the hub
	// sets one (Options.Language). Set by run before any turn.
	language string
	// says is the language of the hub's own words: language, else the
	// hub's default, else Chinese. Set by run before any turn.
	says   string
	down   protocol.AudioParams
	out    Output
	opened time.Time     // downlink timestamps count from it
	nextTs atomic.Uint32 // the least timestamp the next answer's first frame may carry

	// in carries the device's messages and audio in the order they came:
	// a listen stop must not overtake the last frames of the utterance.
	in   chan event
	done chan struct{}
	// halfDuplex: do not listen while speaking (EchoUncancelled).
	halfDuplex bool
	once       sync.Once

	Dropped  atomic.Uint64 // uplink frames dropped (behind, or not listening)
	BadAudio atomic.Uint64 // frames that did not decode
}

type event struct {
	kind              eventKind
	state, mode, text string
	opus              []byte
}

type eventKind uint8

const (
	evListen eventKind = iota
	evAbort
	evAudio
)

func newConversation(e *Engine, deviceID, language string, down protocol.AudioParams, out Output) *Conversation {
	return &Conversation{e: e, deviceID: deviceID, language: language, down: down, out: out, opened: time.Now(),
		in: make(chan event, 64), done: make(chan struct{})}
}

// Listen hands over a listen message (state start/stop/detect, its mode
// and text).
func (c *Conversation) Listen(state, mode, text string) {
	c.send(event{kind: evListen, state: state, mode: mode, text: text})
}

// Abort hands over the device's abort: the answer stops at once.
func (c *Conversation) Abort() { c.send(event{kind: evAbort}) }

// send queues a control message; it waits while the conversation is
// behind (the device's own text budget bounds how often that happens).
func (c *Conversation) send(ev event) {
	select {
	case c.in <- ev:
	case <-c.done:
	}
}

// Audio hands over one uplink Opus frame (copied: the transport's buffer
// is reused). A frame the conversation cannot take at once is dropped.
func (c *Conversation) Audio(opus []byte, _ uint32) {
	select {
	case c.in <- event{kind: evAudio, opus: append([]byte(nil), opus...)}:
	default:
		c.Dropped.Add(1)
	}
}

// Close ends the conversation (the device said goodbye or went away) and
// cancels a turn in progress. It does not wait.
func (c *Conversation) Close() { c.once.Do(func() { close(c.done) }) }

// loop is the state of a conversation's goroutine.
type loop struct {
	c        *Conversation
	ctx      context.Context
	on       bool   // between listen start and the end of the utterance
	mode     string // auto, manual, realtime
	rec      Recognition
	started  time.Time // of the utterance
	pre      [][]int16 // the last frames before speech began (auto, realtime)
	dec      Decoder
	vad      VAD
	t        *turn // the answer in progress
	missing  string
	answered bool // the not-configured answer was given
	silence  *time.Timer
	// gap ends an utterance in auto and realtime modes when the device
	// stops sending audio (Opus DTX sends nothing in silence, so the VAD
	// would never hear the silence that ends it).
	gap *time.Timer
}

// gapTimeout is how long an utterance may go without a frame before it is
// taken as ended (frames come every 60 ms while the device sends).
const gapTimeout = 800 * time.Millisecond

const preFrames = 5 // 300 ms of 60 ms frames kept from before speech began

func (c *Conversation) run() {
	if c.language == "" && c.e.opts.LanguageOf != nil {
		c.language = c.e.opts.LanguageOf(c.deviceID) // off the device's read loop: it may read the store
	}
	c.says = c.language
	if c.says == "" {
		c.says = c.e.opts.Language
	}
	ctx, cancel := context.WithCancel(c.e.ctx)
	defer cancel()
	l := &loop{c: c, ctx: ctx, missing: c.e.missing(), silence: time.NewTimer(c.e.opts.Silence), gap: time.NewTimer(time.Hour)}
	l.gap.Stop()
	defer l.silence.Stop()
	defer l.gap.Stop()
	defer func() {
		if l.rec != nil {
			l.rec.Close()
		}
		if l.t != nil {
			l.t.cancel()
			<-l.t.done
		}
	}()
	for {
		var turnDone <-chan struct{}
		if l.t != nil {
			turnDone = l.t.done
		}
		select {
		case <-ctx.Done():
			return
		case <-c.done:
			return
		case <-l.silence.C:
			c.out.End("no speech for " + c.e.opts.Silence.String())
			return
		case <-l.gap.C:
			if l.rec != nil && l.mode != "manual" {
				l.endUtterance()
			}
		case <-turnDone:
			l.t = nil
			l.silence.Reset(c.e.opts.Silence)
		case ev := <-c.in:
			switch ev.kind {
			case evAudio:
				l.hear(ev.opus)
			case evAbort:
				if l.t != nil {
					l.t.abort()
				}
			case evListen:
				if l.listen(ev) {
					return
				}
			}
		}
	}
}

// listen handles a listen message. It reports whether the conversation
// ended.
func (l *loop) listen(ev event) bool {
	switch ev.state {
	case "start":
		if l.missing != "" {
			// The first turn says what to configure, and ends with tts
			// stop. The device then listens again (auto mode re-sends
			// listen start at once, and legacy firmware after every IoT
			// command): answering each would loop, and ending the
			// conversation would cut off the device's control, so later
			// ones are left alone until the silence timeout ends the
			// conversation, as for any conversation nobody talks in.
			if !l.answered && l.t == nil {
				l.answered = true
				l.t = l.c.say(l.ctx, notConfigured(l.c.says, l.missing), "not_configured", nil)
			}
			return false
		}
		l.on, l.mode = true, ev.mode
		if l.mode == "" {
			l.mode = "auto"
		}
		if l.vad == nil && l.c.e.opts.NewVAD != nil {
			l.vad = l.c.e.opts.NewVAD()
		}
		if l.vad != nil {
			l.vad.Reset()
		}
	case "stop":
		if l.on && l.mode == "manual" && l.t == nil {
			if l.rec == nil && !l.startUtterance() {
				return false
			}
			l.endUtterance()
		}
		l.on = false
	}
	return false
}

// hear handles one uplink frame.
func (l *loop) hear(opus []byte) {
	c := l.c
	if !l.on || l.missing != "" || l.t != nil && (l.mode != "realtime" || c.halfDuplex) {
		c.Dropped.Add(1) // not listening, or the device's mic should be off
		return
	}
	if l.dec == nil {
		var err error
		if l.dec, err = c.e.opts.Codec.NewDecoder(16000); err != nil {
			c.e.log.Warn("no Opus decoder", "err", err)
			l.missing = "a working Opus decoder"
			return
		}
	}
	pcm, err := l.dec.Decode(opus)
	if err != nil {
		c.BadAudio.Add(1)
		return
	}
	ended := false
	if l.mode == "manual" || l.vad == nil {
		if l.rec == nil && !l.startUtterance() {
			return
		}
	} else {
		var speaking bool
		speaking, ended = l.vad.Push(pcm)
		if l.rec == nil {
			if !speaking {
				l.pre = append(l.pre, pcm)
				if len(l.pre) > preFrames {
					l.pre = l.pre[1:]
				}
				return
			}
			if l.t != nil { // realtime: the person talks over the answer
				l.t.abort()
				<-l.t.done
				l.t = nil
			}
			if !l.startUtterance() {
				return
			}
			for _, p := range l.pre {
				_ = l.rec.Write(p)
			}
			l.pre = nil
		}
	}
	_ = l.rec.Write(pcm)
	l.silence.Reset(c.e.opts.Silence)
	if ended || time.Since(l.started) > c.e.opts.MaxUtterance {
		l.endUtterance()
		return
	}
	if l.mode != "manual" && l.vad != nil {
		l.gap.Reset(gapTimeout)
	}
}

// endUtterance hands the utterance to a turn.
func (l *loop) endUtterance() {
	l.gap.Stop()
	rec := l.rec
	l.rec, l.pre = nil, nil
	if l.mode == "manual" {
		l.on = false
	}
	l.t = l.c.startTurn(l.ctx, rec)
}

// startUtterance opens the recognition of a new utterance. When the
// recognizer is unavailable, the device is told so in a turn of its own
// and the microphone side stops until the next listen start.
func (l *loop) startUtterance() bool {
	c := l.c
	hint := c.language
	if c.e.opts.Language != "" {
		hint = "" // the hub's setting (asr-language) wins: the provider applies it
	}
	rec, err := c.e.opts.Recognizer.Start(l.ctx, hint)
	if err != nil {
		c.e.log.Warn("speech recognition unavailable", "device", c.deviceID, "err", err)
		l.on = false
		if l.t == nil {
			l.t = c.say(l.ctx, failed(c.says, "recognition", err), "recognition_failed", err)
		}
		return false
	}
	l.rec, l.started = rec, time.Now()
	return true
}
