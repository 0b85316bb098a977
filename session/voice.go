package session

import (
	"context"
	"encoding/json"

	"github.com/xiaozhi-hub/hub/internal/jsonscan"
	"github.com/xiaozhi-hub/hub/protocol"
)

// Conversations hold spoken conversations (package voice). The session
// opens one at each hello the hub answers, hands it the device's listen
// and abort messages and its audio in the order they came, and closes it
// when the conversation or the connection ends. Without them, audio is
// counted and dropped.
type Conversations interface {
	// Open starts a conversation; language is the hello's ("" when it
	// has none), serverAEC is the hello's features.aec (firmware that
	// leaves echo cancellation to the server).
	Open(deviceID, language string, downlink protocol.AudioParams, serverAEC bool, out ConversationOutput) Conversation
}

// ConversationOutput is how a conversation answers its device.
type ConversationOutput interface {
	WriteText(ctx context.Context, msg []byte) error
	WriteAudio(ctx context.Context, opus []byte, timestampMs uint32) error
	// End ends the conversation on the device's side: over WebSocket the
	// connection closes; over MQTT the device gets a goodbye and its MQTT
	// session stays.
	End(reason string)
}

// Conversation is one open conversation. Its methods run on the session's
// read loop and must not wait for anything but the device's own
// connection: they may do a frame's worth of work there (the voice engine
// decodes each frame and runs its end-of-speech detector inline, so that
// a conversation waiting for speech needs no goroutine of its own). The
// opus slice given to Audio is valid only during the call: the transport
// reuses it.
type Conversation interface {
	Listen(state, mode, text string)
	Abort()
	Audio(opus []byte, timestampMs uint32)
	Close()
}

// openConversation marks the start of the conversation of the hello just
// answered, ending the previous one of the connection. The conversation
// itself starts with the device's first listen, abort or audio (see
// conversation): a connection nobody talks on costs nothing more.
func (s *session) openConversation() {
	s.closeConversation()
	s.talking = s.srv.opts.Voice != nil
}

// conversation returns the open conversation, starting it if the hello
// allowed one; nil when there is none.
func (s *session) conversation() Conversation {
	if s.conv == nil && s.talking {
		s.conv = s.srv.opts.Voice.Open(s.id.DeviceID, s.hello.Language, s.srv.opts.DownlinkAudio, serverAEC(s.hello.Features), conversationOutput{s, s.convID})
	}
	return s.conv
}

func (s *session) closeConversation() {
	s.talking = false
	if s.conv != nil {
		s.conv.Close()
		s.conv = nil
	}
}

// listen hands a listen message to the conversation.
func (s *session) listen(m protocol.Message) {
	conv := s.conversation()
	if conv == nil {
		return
	}
	state, mode, text, err := decodeListen(m.Raw)
	if err != nil {
		s.badInput("bad_listen", err)
		return
	}
	conv.Listen(state, mode, text)
}

var listenKeys = []string{"state", "mode", "text"}

// decodeListen reads a listen message's state, mode and text as
// encoding/json does, without its reflection for a well-formed message:
// encoding/json's large frames grow the read loop's stack, which a
// listening device (every WebSocket device: it connects to talk) would
// keep for as long as it is connected, about 5 KB more than the 4 KiB an
// idle device's read loop needs. raw is valid JSON (a decoded message's).
func decodeListen(raw []byte) (state, mode, text string, err error) {
	var vals [3][]byte
	if jsonscan.ValidMembers(raw, listenKeys, vals[:]) {
		var out [3]string
		ok := true
		for i, v := range vals {
			if ok && v != nil && string(v) != "null" {
				out[i], ok = jsonscan.String(v)
			}
		}
		if ok {
			return out[0], out[1], out[2], nil
		}
	}
	var l struct {
		State string `json:"state"`
		Mode  string `json:"mode"`
		Text  string `json:"text"`
	}
	err = json.Unmarshal(raw, &l)
	return l.State, l.Mode, l.Text, err
}

// conversationOutput is one conversation's way out; sid is its hello's
// session id on an idle connection, so that its End cannot end a later
// conversation.
type conversationOutput struct {
	s   *session
	sid string
}

func (o conversationOutput) WriteText(ctx context.Context, msg []byte) error {
	return o.s.write(ctx, msg, "other")
}

func (o conversationOutput) WriteAudio(ctx context.Context, opus []byte, ts uint32) error {
	if err := o.s.c.WriteAudio(ctx, AudioFrame{Data: opus, Timestamp: ts}); err != nil {
		return err
	}
	o.s.srv.m.Message("out", "audio", len(opus))
	return nil
}

func (o conversationOutput) End(reason string) {
	if o.s.idle != nil {
		o.s.idle.Goodbye(o.sid)
		return
	}
	o.s.closeReason.Store(&reason)
	o.s.c.Close(CloseNormal, reason)
}

// serverAEC reports the hello's features.aec: firmware built with
// CONFIG_USE_SERVER_AEC asks the server to cancel its echo.
func serverAEC(features json.RawMessage) bool {
	var f struct {
		AEC bool `json:"aec"`
	}
	return json.Unmarshal(features, &f) == nil && f.AEC
}
