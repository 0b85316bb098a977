package voice

import (
	"context"
	"errors"
	"io"
	"sync/atomic"
	"time"

	"github.com/xiaozhi-hub/hub/protocol"
)

// downlink is the audio of one answer, from tts start to tts stop: paced,
// and encoded by ONE Opus encoder for all its sentences. The firmware
// resets its decoder at tts start only (not at sentence_start), so a
// fresh encoder for each sentence would meet a decoder that goes on from
// the previous sentence: a click, up to full scale, at every sentence
// boundary (docs/protocol.md §7.2).
//
// While the first frame waits for the device to be speaking (the
// speaking delay), the frames that will go at once when the wait ends
// (the lead's worth) are encoded ahead and kept: when many answers start
// together, their encoding is done during the wait, not while their
// devices play the first frame with nothing behind it.
type downlink struct {
	t     *turn
	p     *pacer
	enc   Encoder  // made by the first sentence spoken
	early [][]byte // packets encoded ahead, not yet sent
}

func (c *Conversation) newDownlink(t *turn) *downlink {
	p := newPacer(c.down, c.e.opts.Lead, t.ttsStart.Add(c.e.opts.SpeakingDelay), c.opened)
	p.next = &c.nextTs
	return &downlink{t: t, p: p}
}

// speak synthesises text and sends it as paced Opus frames. Frames kept
// ahead are sent before it returns, so the next sentence's sentence_start
// follows this sentence's audio.
func (c *Conversation) speak(ctx context.Context, t *turn, d *downlink, text string) error {
	if c.e.opts.Synthesizer == nil {
		return nil
	}
	voice := c.e.opts.Voice
	if c.e.opts.VoiceOf != nil {
		if v := c.e.opts.VoiceOf(c.deviceID); v != "" {
			voice = v
		}
	}
	sp, err := c.e.opts.Synthesizer.Synthesize(ctx, text, voice)
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
	for {
		// Frames kept ahead go once the wait is over, not after
		// synthesis's next chunk.
		if !d.p.early(len(d.early)) {
			if err := d.flush(ctx); err != nil {
				return err
			}
		}
		chunk, err := sp.Read(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			_ = d.flush(ctx) // what was encoded before the failure is heard, as it would have been sent
			return err
		}
		for _, f := range fr.push(chunk) {
			if err := d.send(ctx, f); err != nil {
				return err
			}
		}
	}
	if f := fr.flush(); f != nil {
		if err := d.send(ctx, f); err != nil {
			return err
		}
	}
	return d.flush(ctx)
}

// send encodes one frame and sends it when the pacer lets it go, or keeps
// it while the first frame waits for the device to be speaking.
func (d *downlink) send(ctx context.Context, pcm []int16) error {
	pkt, err := d.enc.Encode(pcm)
	if err != nil {
		return err
	}
	if d.p.early(len(d.early)) {
		d.early = append(d.early, pkt)
		return nil
	}
	if err := d.flush(ctx); err != nil {
		return err
	}
	return d.out(ctx, pkt)
}

// flush sends the packets kept ahead, in order.
func (d *downlink) flush(ctx context.Context) error {
	defer func() { d.early = d.early[:0] }()
	for _, pkt := range d.early {
		if err := d.out(ctx, pkt); err != nil {
			return err
		}
	}
	return nil
}

// out waits for the pacer and sends one packet.
func (d *downlink) out(ctx context.Context, pkt []byte) error {
	ts, err := d.p.wait(ctx)
	if err != nil {
		return err
	}
	return d.t.audio(ctx, pkt, ts)
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

// early reports whether a frame encoded now, with kept frames already
// encoded ahead, is to be kept too: the first frame has not gone, the
// device is not speaking yet, and the frames kept are fewer than go at
// once when the wait ends (the first, and the lead's worth after it).
func (p *pacer) early(kept int) bool {
	return p.start.IsZero() && kept <= int(p.lead/p.frame) && time.Now().Before(p.notBefore)
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
