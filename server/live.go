package server

import (
	"context"
	"sync"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/agent"
	"github.com/xiaozhi-hub/hub/cluster"
	"github.com/xiaozhi-hub/hub/livesettings"
	"github.com/xiaozhi-hub/hub/persona"
	"github.com/xiaozhi-hub/hub/protocol"
	"github.com/xiaozhi-hub/hub/registry"
	"github.com/xiaozhi-hub/hub/session"
	"github.com/xiaozhi-hub/hub/voice"
)

// openLive opens the live settings (stored ones over the configuration:
// the agent's model and the speech providers, rebuilt on each change) and
// the personas and memories of the devices' assistant.
// In a cluster they are the cluster's (cluster/settings.go).
func (h *Hub) openLive(ctx context.Context) error {
	var st cluster.SettingsStore = h.store
	if h.cluster != nil {
		st = h.cluster.Node.SettingsStore(h.store)
	}
	var err error
	h.live, err = livesettings.Open(ctx, livesettings.Options{
		Store: st, Homes: st, Base: h.cfg, Sources: h.sources, Logger: h.log.With("component", "settings"),
	})
	if err != nil {
		return err
	}
	if h.cluster != nil {
		if err := h.cluster.Node.ServeSettings(ctx, h.live); err != nil {
			return err
		}
	}
	reg := h.Registry
	h.personas = persona.New(persona.Options{
		Store: st, Devices: reg, Homes: h.accounts, Model: h.live.LLM(),
		Logger: h.log.With("component", "persona"),
		OnMemory: func(m hub.Memory) {
			reg.Record(hub.EventMemoryUpdated, m.Device, map[string]int{"chars": len([]rune(m.Text))})
		},
	})
	h.closers.pushf(h.personas.Close) // after the voice engine: its conversations' ends are written first
	return nil
}

// liveAgent is the agent as the API serves it: ready when the live
// settings name a usable model.
type liveAgent struct {
	*agent.Agent
	llm livesettings.LLM
}

func (a liveAgent) Ready() error { return a.llm.Ready() }

// liveParts gives the voice engine the providers and settings in force
// for a device: its home's own, else the hub's.
func (h *Hub) liveParts(deviceID string) voice.Parts {
	var home string
	if d, err := h.Registry.Device(deviceID); err == nil {
		home = d.Home
	}
	c := h.live.For(home)
	return voice.Parts{Recognizer: c.Recognizer, Synthesizer: c.Synthesizer,
		Voice: c.Config.TTSVoice, Language: c.Config.ASRLanguage, Silence: c.Config.ConversationTimeout, Unready: c.LLMErr}
}

// personaBrain answers spoken turns as the device's persona, with what it
// remembers, and notes each exchange for the memory.
type personaBrain struct {
	next     voice.Brain
	llm      livesettings.LLM
	reg      *registry.Registry
	personas *persona.Service
	voices   *sync.Map // device id → the persona's voice, as of its last turn
}

func (b personaBrain) Ready() error { return b.llm.Ready() }

func (b personaBrain) Answer(ctx context.Context, t voice.Turn, onText func(string)) (string, error) {
	var home string
	if d, err := b.reg.Device(t.DeviceID); err == nil {
		home = d.Home
	}
	prompt, p := b.personas.Prompt(ctx, t.DeviceID, home, t.Language)
	b.voices.Store(t.DeviceID, p.Voice)
	answer, err := b.next.Answer(livesettings.WithPrompt(ctx, prompt), t, onText)
	if err == nil {
		b.personas.Heard(t.DeviceID, t.Text, answer)
	}
	return answer, err
}

// voiceOf is the voice of a device: a person's choice for the device
// (PATCH voice), else its persona's (empty: the tts-voice setting).
func (b personaBrain) voiceOf(id string) string {
	if d, err := b.reg.Device(id); err == nil && d.Voice != "" {
		return d.Voice
	}
	if v, ok := b.voices.Load(id); ok {
		return v.(string)
	}
	return ""
}

// rememberingConversations tell the personas when a device's conversation
// ends, so that its memory is written.
type rememberingConversations struct {
	next  session.Conversations
	ended func(deviceID string)
}

func (r rememberingConversations) Open(deviceID, language string, down protocol.AudioParams, serverAEC bool, out session.ConversationOutput) session.Conversation {
	return endingConversation{r.next.Open(deviceID, language, down, serverAEC, out), func() { r.ended(deviceID) }}
}

type endingConversation struct {
	session.Conversation
	ended func()
}

func (c endingConversation) Close() {
	c.Conversation.Close()
	c.ended()
}
