package server

import (
	"context"

	"github.com/xiaozhi-hub/hub"

	"github.com/xiaozhi-hub/hub/agent"
	"github.com/xiaozhi-hub/hub/opus"
	"github.com/xiaozhi-hub/hub/protocol"
	"github.com/xiaozhi-hub/hub/registry"
	"github.com/xiaozhi-hub/hub/session"
	"github.com/xiaozhi-hub/hub/vad"
	"github.com/xiaozhi-hub/hub/voice"
)

// voiceConversations serves the device sessions' conversations with the
// voice engine.
type voiceConversations struct{ e *voice.Engine }

func (v voiceConversations) Open(deviceID, language string, down protocol.AudioParams, serverAEC bool, out session.ConversationOutput) session.Conversation {
	if serverAEC {
		return v.e.Open(deviceID, language, down, out, voice.EchoUncancelled())
	}
	return v.e.Open(deviceID, language, down, out)
}

// agentBrain answers spoken turns with the built-in agent, acting with the
// rights of the speaking device's home (hub.DevicePrincipal), as that home
// is at the start of the turn: "turn off the kitchen light" said to a
// device in one home never reaches another home's devices.
type agentBrain struct {
	a   *agent.Agent
	reg *registry.Registry
}

func (b agentBrain) Ready() error { return b.a.Ready() }

func (b agentBrain) Answer(ctx context.Context, t voice.Turn, onText func(string)) (string, error) {
	d, err := b.reg.Device(t.DeviceID)
	if err != nil {
		return "", err // a device forgotten while it spoke acts for nobody
	}
	ctx = hub.WithPrincipal(ctx, hub.DevicePrincipal(d.ID, d.Home))
	return b.a.Speak(ctx, t.DeviceID, t.Text, onText)
}

// voiceOptions gives the voice engine its codec and the speech providers
// the settings name (none when they name none); Validate has checked the
// settings.
func voiceOptions(cfg Config) (voice.Options, error) {
	rec, syn, err := cfg.Speech()
	if err != nil {
		return voice.Options{}, err
	}
	return voice.Options{Codec: opus.Codec{Settings: cfg.Opus()}, Recognizer: rec, Synthesizer: syn,
		NewVAD:  func() voice.VAD { return vad.NewEnergy(vad.Config{}) },
		Silence: cfg.ConversationTimeout, Voice: cfg.TTSVoice, Language: cfg.ASRLanguage}, nil
}
