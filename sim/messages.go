package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/coder/websocket"
	"github.com/xiaozhi-hub/hub/protocol"
)

// onText handles one server text frame, as Application::OnIncomingJson and
// the protocol layer do (docs/protocol.md §3.4, §5.2).
func (d *Device) onText(l *link, data []byte) {
	if d.cfg.OnText != nil {
		d.cfg.OnText(data)
	}
	if d.cfg.RecordFrames {
		d.mu.Lock()
		d.frames = append(d.frames, bytes.Clone(data))
		d.mu.Unlock()
	}
	var root map[string]json.RawMessage
	if err := json.Unmarshal(data, &root); err != nil {
		d.log.Warn("sim: text frame is not a JSON object", "err", err)
		return
	}
	typ, ok := str(item(root, "type"))
	if !ok {
		d.log.Warn("sim: message without a string type, ignored") // §3.4
		return
	}
	switch typ {
	case "hello":
		d.onHello(l, root)
	case "mcp":
		// The payload must be an object; anything else is ignored (§5.2).
		if p := item(root, "payload"); kind(p) == '{' && d.cfg.Mode == ModeMCP {
			d.handleMCP(l, p)
		}
	case "iot":
		if d.cfg.Mode == ModeIoT {
			d.onIoTCommands(l, root)
		}
	case "tts":
		state, _ := str(item(root, "state"))
		d.onTTS(l, state)
	case "system":
		// {"type":"system","command":"reboot"} reboots (§5.2); other commands are logged.
		if cmd, _ := str(item(root, "command")); cmd == "reboot" {
			d.loop.schedule(func() { d.reboot(l) })
		} else {
			d.log.Info("sim: unknown system command", "command", cmd)
		}
	default:
		d.log.Debug("sim: unknown message type", "type", typ)
	}
}

// onHello parses a server hello (§3.3). The first valid one on a link opens
// the channel; invalid ones fail Connect with the reason.
func (d *Device) onHello(l *link, root map[string]json.RawMessage) {
	t := item(root, "transport")
	reason := ""
	switch transport, isStr := str(t); {
	case t == nil:
		reason = `"transport" is missing (firmware 2.4.2 dereferences a null pointer here and crashes)`
	case !isStr:
		reason = fmt.Sprintf(`"transport" is %s, not a string (firmware 2.4.2 dereferences a null pointer here and crashes)`, t)
	case transport != "websocket":
		reason = fmt.Sprintf(`"transport" is %q, want "websocket" (the firmware ignores this hello and times out after 10 s)`, transport)
	}
	d.mu.Lock()
	first := !l.helloed
	d.mu.Unlock()
	if reason != "" {
		if first {
			d.failLink(l, fmt.Errorf("%w: %s", ErrHello, reason))
		} else {
			d.log.Warn("sim: later server hello ignored", "reason", reason)
		}
		return
	}
	d.mu.Lock()
	if l.err != nil { // timed out already
		d.mu.Unlock()
		return
	}
	// session_id is stored and echoed; without one the old value stays.
	if sid, ok := str(item(root, "session_id")); ok {
		d.sessionID = sid
	}
	var ap map[string]json.RawMessage
	if json.Unmarshal(item(root, "audio_params"), &ap) == nil {
		if n, ok := number(item(ap, "sample_rate")); ok {
			d.downlink.SampleRate = cInt(n)
		}
		if n, ok := number(item(ap, "frame_duration")); ok {
			d.downlink.FrameDuration = cInt(n)
		}
	}
	if !first {
		d.mu.Unlock()
		return // a later hello only updates session and audio (§3.3)
	}
	l.helloed = true
	d.connects++
	sid := d.sessionID
	d.mu.Unlock()
	d.log.Info("sim: connected", "session_id", sid)
	l.timer.Stop()
	d.onChannelOpened(l)
	close(l.hello)
}

// onChannelOpened runs what OnAudioChannelOpened does (§9), then optionally
// starts listening as after a button press (§6).
func (d *Device) onChannelOpened(l *link) {
	if d.cfg.Mode == ModeIoT {
		d.sendIoTOpen(l)
	}
	if d.cfg.ListenOnConnect {
		d.enterListening(l)
	}
}

// onTTS applies tts start/stop on the main loop (§5.2, §5.3).
func (d *Device) onTTS(l *link, state string) {
	switch state {
	case "start":
		d.loop.schedule(func() {
			d.mu.Lock()
			d.state = StateSpeaking
			d.mu.Unlock()
		})
	case "stop":
		d.loop.schedule(func() {
			d.mu.Lock()
			speaking, manual := d.state == StateSpeaking, d.listenMode == "manual"
			if speaking && manual {
				d.state = StateIdle // push-to-talk: the turn ends in idle (§5.2, §6)
			}
			d.mu.Unlock()
			if speaking && !manual {
				// Auto mode: back to listening, which sends "listen start"
				// once playback drained (§6).
				d.enterListening(l)
			}
		})
	}
}

// enterListening is SetDeviceState(listening): legacy firmware first sends
// the IoT states that changed, then "listen start" in auto mode (§9, §5.1).
func (d *Device) enterListening(l *link) {
	d.mu.Lock()
	d.state, d.listenMode = StateListening, "auto"
	d.mu.Unlock()
	if d.cfg.Mode == ModeIoT {
		d.sendIoTStates(l, true)
	}
	_ = d.sendText(l, d.listenMessage("start", "auto", ""))
}

// reboot drops the connection about a second later (§8.6, §5.2).
func (d *Device) reboot(l *link) {
	d.log.Info("sim: rebooting")
	time.AfterFunc(time.Second, l.drop)
}

func (d *Device) onAudio(data []byte) {
	if d.cfg.OnAudio != nil {
		d.cfg.OnAudio(data)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.state == StateSpeaking {
		d.audioIn++ // every binary frame is taken as Opus (§3.4)
	} else {
		d.audioDropped++ // audio is only queued while speaking (§5.3)
	}
}

// listenMessage builds a listen frame by concatenation, exactly as
// protocol.cc does (§5.1; values are not JSON-escaped there either).
func (d *Device) listenMessage(state, mode, text string) []byte {
	s := `{"session_id":"` + d.SessionID() + `","type":"listen","state":"` + state + `"`
	switch state {
	case "start":
		s += `,"mode":"` + mode + `"`
	case "detect":
		s += `,"text":"` + text + `"`
	}
	return []byte(s + "}")
}

// SendListenStart sends {"session_id":…,"type":"listen","state":"start","mode":mode}
// (§5.1); mode is "auto", "manual" or "realtime". The device enters listening.
func (d *Device) SendListenStart(ctx context.Context, mode string) error {
	l, err := d.current()
	if err != nil {
		return err
	}
	d.mu.Lock()
	d.state, d.listenMode = StateListening, mode
	d.mu.Unlock()
	return l.conn.Write(ctx, websocket.MessageText, d.listenMessage("start", mode, ""))
}

// SendListenStop sends {"session_id":…,"type":"listen","state":"stop"} (§5.1):
// push-to-talk released. The device goes idle; the socket stays open.
func (d *Device) SendListenStop(ctx context.Context) error {
	l, err := d.current()
	if err != nil {
		return err
	}
	d.mu.Lock()
	d.state = StateIdle
	d.mu.Unlock()
	return l.conn.Write(ctx, websocket.MessageText, d.listenMessage("stop", "", ""))
}

// SendListenDetect sends {"session_id":…,"type":"listen","state":"detect","text":wakeWord} (§5.1).
func (d *Device) SendListenDetect(ctx context.Context, wakeWord string) error {
	l, err := d.current()
	if err != nil {
		return err
	}
	return l.conn.Write(ctx, websocket.MessageText, d.listenMessage("detect", "", wakeWord))
}

// SendAbort sends {"session_id":…,"type":"abort"}, with ,"reason":reason
// when reason is non-empty (the firmware uses "wake_word_detected", §5.1).
func (d *Device) SendAbort(ctx context.Context, reason string) error {
	l, err := d.current()
	if err != nil {
		return err
	}
	s := `{"session_id":"` + d.SessionID() + `","type":"abort"`
	if reason != "" {
		s += `,"reason":"` + reason + `"`
	}
	return l.conn.Write(ctx, websocket.MessageText, []byte(s+"}"))
}

// SilentOpus is a minimal Opus packet (one 20 ms CELT frame of silence),
// small enough for load tests.
var SilentOpus = []byte{0xf8, 0xff, 0xfe}

// SendAudio sends one Opus packet as a binary frame in the device's
// protocol-version framing (§3.4). timestamp is used by v2 only (server AEC,
// §7.4); the firmware sends 0 otherwise.
func (d *Device) SendAudio(ctx context.Context, timestamp uint32, opus []byte) error {
	l, err := d.current()
	if err != nil {
		return err
	}
	frame := protocol.AppendAudioFrame(make([]byte, 0, 16+len(opus)), d.cfg.ProtocolVersion, timestamp, opus)
	return l.conn.Write(ctx, websocket.MessageBinary, frame)
}
