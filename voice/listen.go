package voice

import (
	"context"
	"time"

	"github.com/xiaozhi-hub/hub/ogg"
	"github.com/xiaozhi-hub/hub/voice/driver"
)

// utterance is what a person says, from its first frame to the end of
// speech, on its way to recognition. Its goroutine (recognize) opens the
// recognition and writes the frames into it as they are heard, then runs
// the turn the utterance becomes.
//
// The frames are PCM, decoded as they are heard; or, when the recognizer
// takes Opus (driver.OpusRecognizer) and no VAD needs PCM (listen mode
// manual, or no VAD), the device's packets themselves, never decoded.
// Exactly one of frames and packets is made; it is closed when the
// utterance ends.
type utterance struct {
	ctx     context.Context // ends with the conversation
	cancel  context.CancelFunc
	parts   Parts        // the providers and settings in force when it began
	frames  chan []int16 // PCM in the order heard
	packets chan []byte  // the packets in the order heard, copied into arena
	arena   []byte       // where packets are kept: a chunk at a time, never written over
	started time.Time
	// gap ends the utterance in auto and realtime modes when the device
	// stops sending audio (Opus DTX sends nothing in silence, so the VAD
	// would never hear the silence that ends it): at gapAt, pushed back
	// by every frame.
	gap   *time.Timer
	gapAt time.Time
	// turn is the answer the utterance became, set before frames is
	// closed; nil when the utterance was abandoned (the conversation ended).
	turn *turn
}

// gapTimeout is how long an utterance may go without a frame before it is
// taken as ended (frames come every 60 ms while the device sends).
const gapTimeout = 800 * time.Millisecond

const preFrames = 5 // 300 ms of 60 ms frames kept from before speech began

// heardQueue is how many frames may wait for the recognition (3.8 s of
// 60 ms frames: a recognizer still connecting, or slow to take audio);
// beyond it frames are dropped.
const heardQueue = 64

// hearing is whether uplink audio is taken: between listen start and the
// end of the utterance, and during an answer only in realtime mode with
// echo cancellation. c.mu is held.
func (c *Conversation) hearing() bool {
	return !c.ended && c.on && c.missing == "" && (c.t == nil || c.mode == "realtime" && !c.halfDuplex)
}

// settle gives the decoder back to the codec while no audio is taken, so
// that a conversation between utterances holds none (the next frame heard
// takes one). c.mu is held.
func (c *Conversation) settle() {
	if c.dec != nil && !c.hearing() {
		release(c.dec)
		c.dec = nil
	}
}

// release gives a coder back to the codec, if it keeps coders (Codec).
func release(coder any) {
	if r, ok := coder.(interface{ Release() }); ok {
		r.Release()
	}
}

// hear handles one uplink frame: decoded, and in auto and realtime modes
// given to the end-of-speech detector, on the caller's goroutine; it
// starts an utterance's goroutine when speech begins. In manual mode (or
// with no VAD) a recognizer that takes Opus is given the packet instead,
// checked (ogg.OpusSamples) and not decoded. It returns the answer the
// frame interrupts (realtime mode: the person talks over it), to be
// aborted once c.mu is released. c.mu is held.
func (c *Conversation) hear(packet []byte) (interrupted *turn) {
	if !c.hearing() {
		c.Dropped.Add(1) // not listening, or the device's mic should be off
		return nil
	}
	now := time.Now()
	ended := false
	if c.mode == "manual" || c.vad == nil {
		// Everything heard is the utterance: the recognizer decides at
		// its first frame whether it is heard as packets or as PCM.
		var parts Parts
		asPackets := c.utt != nil && c.utt.packets != nil
		if c.utt == nil {
			parts = c.e.parts(c.deviceID)
			asPackets = driver.TakesOpus(parts.Recognizer)
		}
		var pcm []int16
		if asPackets {
			if _, err := ogg.OpusSamples(packet); err != nil {
				c.BadAudio.Add(1)
				return nil
			}
		} else if pcm = c.decode(packet); pcm == nil {
			return nil
		}
		if c.utt == nil {
			c.startUtterance(now, parts, asPackets)
		}
		if asPackets {
			c.pushPacket(packet)
		} else {
			c.push(pcm)
		}
	} else {
		pcm := c.decode(packet)
		if pcm == nil {
			return nil
		}
		var speaking bool
		speaking, ended = c.vad.Push(pcm)
		if c.utt == nil {
			if !speaking {
				c.pre = append(c.pre, pcm)
				if len(c.pre) > preFrames {
					c.pre = c.pre[1:]
				}
				return nil
			}
			interrupted, c.t = c.t, nil
			c.startUtterance(now, c.e.parts(c.deviceID), false)
			for _, p := range c.pre {
				c.push(p)
			}
			c.pre = nil
		}
		c.push(pcm)
	}
	c.heard(now)
	if ended || now.Sub(c.utt.started) > c.e.opts.MaxUtterance {
		c.endUtterance()
		return interrupted
	}
	if c.utt.gap != nil {
		c.utt.gapAt = now.Add(gapTimeout)
	}
	return interrupted
}

// decode decodes a packet with the conversation's decoder (taken from the
// codec for the first one heard); nil when it cannot be decoded, counted
// as bad audio. c.mu is held.
func (c *Conversation) decode(packet []byte) []int16 {
	if c.dec == nil {
		var err error
		if c.dec, err = c.e.opts.Codec.NewDecoder(16000); err != nil {
			c.e.log.Warn("no Opus decoder", "err", err)
			c.missing = "a working Opus decoder"
			return nil
		}
	}
	pcm, err := c.dec.Decode(packet)
	if err != nil {
		c.BadAudio.Add(1)
		return nil
	}
	return pcm
}

// push queues a frame of the utterance for its recognition, or drops it
// when the recognition is behind. c.mu is held.
func (c *Conversation) push(pcm []int16) {
	select {
	case c.utt.frames <- pcm:
	default:
		c.Dropped.Add(1)
	}
}

// pushPacket queues a copy of a packet (the transport may reuse its
// buffer) for the utterance's recognition, or drops it when the
// recognition is behind. c.mu is held.
func (c *Conversation) pushPacket(packet []byte) {
	u := c.utt
	if len(u.packets) == cap(u.packets) {
		c.Dropped.Add(1)
		return
	}
	if cap(u.arena)-len(u.arena) < len(packet) {
		u.arena = make([]byte, 0, max(arenaChunk, len(packet)))
	}
	n := len(u.arena)
	u.arena = append(u.arena, packet...)
	u.packets <- u.arena[n:len(u.arena):len(u.arena)] // room was checked; c.mu is held
}

// arenaChunk is the room made at a time for an utterance's packets
// (about half a second of speech at 32 kbps). The recognition copies each
// packet out as it takes it, so a chunk lives only while its packets wait.
const arenaChunk = 2048

// startUtterance starts hearing an utterance, and its goroutine: as
// packets, or as PCM. c.mu is held.
func (c *Conversation) startUtterance(now time.Time, parts Parts, packets bool) {
	ctx, cancel := context.WithCancel(c.e.ctx)
	u := &utterance{ctx: ctx, cancel: cancel, parts: parts, started: now}
	if packets {
		u.packets = make(chan []byte, heardQueue)
	} else {
		u.frames = make(chan []int16, heardQueue)
	}
	if c.mode != "manual" && c.vad != nil {
		u.gapAt = now.Add(gapTimeout)
		u.gap = time.AfterFunc(gapTimeout, func() { c.gapped(u) })
	}
	c.utt = u
	prev := c.last
	c.goOwned(func() { c.recognize(u, prev) })
}

// gapped runs when an utterance's gap timer fires: the device stopped
// sending audio.
func (c *Conversation) gapped(u *utterance) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.utt != u {
		return
	}
	if left := time.Until(u.gapAt); left > 0 {
		u.gap.Reset(left)
		return
	}
	if c.mode != "manual" {
		c.endUtterance()
	}
}

// endUtterance hands the utterance to a turn: its goroutine goes on with
// it. c.mu is held and c.utt is set.
func (c *Conversation) endUtterance() {
	u := c.utt
	c.utt, c.pre = nil, nil
	if u.gap != nil {
		u.gap.Stop()
	}
	if c.mode == "manual" {
		c.on = false
	}
	u.turn = c.newTurn(u.ctx)
	c.t = u.turn
	u.close()
	c.settle()
}

// abandon ends an utterance that will not be answered (the conversation
// ended). c.mu is held.
func (u *utterance) abandon() {
	if u.gap != nil {
		u.gap.Stop()
	}
	u.cancel()
	u.close()
}

// close ends the utterance's frames or packets, and lets go of the
// arena (the packets still queued hold what they need of it).
func (u *utterance) close() {
	u.arena = nil
	if u.packets != nil {
		close(u.packets)
	} else {
		close(u.frames)
	}
}

// recognize is an utterance's goroutine: it opens the recognition (once
// prev, the previous turn, has ended: an answer the person talked over,
// or one whose tts stop is being sent), writes the utterance into
// it as it is heard, and then runs its turn. When the recognizer is
// unavailable the device is told so in a turn, and the microphone side
// stops until the next listen start.
func (c *Conversation) recognize(u *utterance, prev *turn) {
	defer u.cancel()
	if prev != nil {
		<-prev.done // its tts stop and record come before anything of this turn
	}
	parts := u.parts
	hint := c.language
	if parts.Language != "" {
		hint = "" // the hub's setting (asr-language) wins: the provider applies it
	}
	var rec Recognition
	err := ErrNotConfigured // the recognizer was taken away since the conversation opened
	if parts.Recognizer != nil {
		rec, err = parts.Recognizer.Start(u.ctx, hint)
	}
	if err != nil {
		if u.ctx.Err() == nil {
			c.e.log.Warn("speech recognition unavailable", "device", c.deviceID, "err", err)
		}
		if t := c.unheard(u); t != nil {
			t.run(func(ctx context.Context) {
				c.say(ctx, t, failed(c.says, "recognition", err), "recognition_failed", err)
			})
		}
		return
	}
	if t := c.transcribe(u, rec); t != nil {
		t.run(func(ctx context.Context) { c.reply(ctx, t, rec) })
		return
	}
	rec.Close()
}

// transcribe writes the utterance into rec as it is heard, and returns its
// turn once it has ended; nil when it was abandoned.
func (c *Conversation) transcribe(u *utterance, rec Recognition) *turn {
	ow, _ := rec.(OpusWriter)
	if u.packets != nil && ow == nil {
		c.e.log.Error("a recognizer that takes Opus opened a recognition that does not: the utterance is lost", "device", c.deviceID)
	}
	for {
		select {
		case pcm, ok := <-u.frames:
			if !ok {
				return u.turn // set before frames was closed
			}
			_ = rec.Write(pcm)
		case p, ok := <-u.packets:
			if !ok {
				return u.turn
			}
			if ow != nil {
				_ = ow.WriteOpus(p)
			}
		case <-u.ctx.Done(): // the engine closes: the turn, if any, ends at once
			c.mu.Lock()
			defer c.mu.Unlock()
			return u.turn
		}
	}
}

// unheard stops hearing an utterance whose recognition could not start,
// and returns the turn that says so: the utterance's own when it has
// ended already, else a new one (none when another answer is in
// progress or the conversation ended).
func (c *Conversation) unheard(u *utterance) *turn {
	c.mu.Lock()
	defer c.mu.Unlock()
	if u.turn != nil {
		if c.t == u.turn {
			c.on = false
			c.settle()
		}
		return u.turn
	}
	if c.utt != u {
		return nil // abandoned
	}
	c.utt, c.pre = nil, nil
	if u.gap != nil {
		u.gap.Stop()
	}
	c.on = false
	c.settle()
	if c.t != nil {
		return nil
	}
	c.t = c.newTurn(u.ctx)
	return c.t
}
