package server

import (
	"context"
	"encoding/json"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/agent"
	"github.com/xiaozhi-hub/hub/asr"
	"github.com/xiaozhi-hub/hub/opus"
	"github.com/xiaozhi-hub/hub/ota"
	"github.com/xiaozhi-hub/hub/protocol"
	"github.com/xiaozhi-hub/hub/registry"
	"github.com/xiaozhi-hub/hub/session"
	"github.com/xiaozhi-hub/hub/tts"
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

// agentBrain answers spoken turns with the built-in agent.
type agentBrain struct{ a *agent.Agent }

func (b agentBrain) Ready() error { return b.a.Ready() }

func (b agentBrain) Answer(ctx context.Context, t voice.Turn, onText func(string)) (string, error) {
	return b.a.Speak(ctx, t.DeviceID, t.Text, onText)
}

// voiceMetrics records finished turns as device events and metrics.
type voiceMetrics struct {
	turns  *prometheus.CounterVec
	stages *prometheus.HistogramVec
}

func (h *Hub) newVoiceMetrics() *voiceMetrics {
	v := &voiceMetrics{
		turns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "xiaozhi_hub_voice_turns_total", Help: "Spoken turns by outcome (ok, empty, aborted, timeout, not_configured, recognition_failed, answer_failed, speech_failed).",
		}, []string{"outcome"}),
		stages: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "xiaozhi_hub_voice_stage_seconds",
			Help:    "Time from the end of an utterance to: the recognised text (recognition), the model's first sentence (first_sentence), the first audio frame out (first_audio).",
			Buckets: []float64{.01, .025, .05, .1, .25, .5, 1, 2, 4, 8, 16, 30},
		}, []string{"stage"}),
	}
	if r := h.Metrics.Registry; r != nil {
		r.MustRegister(v.turns, v.stages, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "xiaozhi_hub_voice_conversations", Help: "Conversations open (a device's hello answered, not yet ended).",
		}, func() float64 { return float64(h.voice.Active()) }))
	}
	return v
}

func (v *voiceMetrics) turn(reg *registry.Registry, r voice.TurnRecord) {
	v.turns.WithLabelValues(r.Outcome).Inc()
	for stage, ms := range map[string]float64{"recognition": r.RecognitionMs, "first_sentence": r.FirstSentenceMs, "first_audio": r.FirstAudioMs} {
		if ms > 0 {
			v.stages.WithLabelValues(stage).Observe(ms / 1000)
		}
	}
	reg.Record(hub.EventVoiceTurn, r.DeviceID, r)
}

// The adapters below give the voice engine its codec and providers.

type opusCodec struct{}

func (opusCodec) NewDecoder(rate int) (voice.Decoder, error) {
	d, err := opus.NewDecoder(rate)
	if err != nil {
		return nil, err
	}
	return d, nil
}

func (opusCodec) NewEncoder(rate, frameMs int) (voice.Encoder, error) {
	e, err := opus.NewEncoder(rate, frameMs)
	if err != nil {
		return nil, err
	}
	return e, nil
}

type openAIRecognizer struct{ o *asr.OpenAI }

func (r openAIRecognizer) Start(ctx context.Context, language string) (voice.Recognition, error) {
	u, err := r.o.Start(ctx, language)
	if err != nil {
		return nil, err
	}
	return u, nil
}

// streamRecognizer adapts the WebSocket recognizers (FunASR, DashScope).
type streamRecognizer struct {
	start func(ctx context.Context, language string) (*asr.Stream, error)
}

func (r streamRecognizer) Start(ctx context.Context, language string) (voice.Recognition, error) {
	s, err := r.start(ctx, language)
	if err != nil {
		return nil, err
	}
	return s, nil
}

type openAISynthesizer struct{ o *tts.OpenAI }

func (s openAISynthesizer) Synthesize(ctx context.Context, text, v string) (voice.Speech, error) {
	st, err := s.o.Synthesize(ctx, text, v)
	if err != nil {
		return nil, err
	}
	return st, nil
}

type dashScopeSynthesizer struct{ d *tts.DashScope }

func (s dashScopeSynthesizer) Synthesize(ctx context.Context, text, v string) (voice.Speech, error) {
	st, err := s.d.Synthesize(ctx, text, v)
	if err != nil {
		return nil, err
	}
	return st, nil
}

// voiceOptions builds the voice engine's providers from the settings.
func voiceOptions(cfg Config) voice.Options {
	o := voice.Options{Codec: opusCodec{}, NewVAD: func() voice.VAD { return vad.NewEnergy(vad.Config{}) },
		Silence: cfg.ConversationTimeout, Voice: cfg.TTSVoice, Language: cfg.ASRLanguage}
	switch cfg.ASRProvider {
	case "openai":
		o.Recognizer = openAIRecognizer{&asr.OpenAI{BaseURL: cfg.ASRBaseURL, APIKey: cfg.ASRAPIKey, Model: cfg.ASRModel, Language: cfg.ASRLanguage}}
	case "funasr":
		o.Recognizer = streamRecognizer{(&asr.FunASR{URL: cfg.ASRBaseURL}).Start}
	case "dashscope":
		o.Recognizer = streamRecognizer{(&asr.DashScope{URL: cfg.ASRBaseURL, APIKey: cfg.ASRAPIKey, Model: cfg.ASRModel, Language: cfg.ASRLanguage}).Start}
	}
	switch cfg.TTSProvider {
	case "openai":
		o.Synthesizer = openAISynthesizer{&tts.OpenAI{BaseURL: cfg.TTSBaseURL, APIKey: cfg.TTSAPIKey, Model: cfg.TTSModel, Voice: cfg.TTSVoice, SampleRate: cfg.TTSSampleRate}}
	case "dashscope":
		o.Synthesizer = dashScopeSynthesizer{&tts.DashScope{URL: cfg.TTSBaseURL, APIKey: cfg.TTSAPIKey, Model: cfg.TTSModel, Voice: cfg.TTSVoice, SampleRate: cfg.TTSSampleRate}}
	}
	return o
}

// deviceLanguage is the language a device reported at its OTA check (its
// system info's "language", e.g. "en-US": docs/protocol.md §2.1), from
// the registry, else from its trust record; "" when it never said.
func deviceLanguage(reg *registry.Registry, trust *ota.Service) func(deviceID string) string {
	of := func(info json.RawMessage) string {
		var v struct {
			Language string `json:"language"`
		}
		if json.Unmarshal(info, &v) != nil || len(v.Language) > 16 {
			return ""
		}
		return v.Language
	}
	return func(id string) string {
		if d, err := reg.Device(id); err == nil {
			if l := of(d.SystemInfo); l != "" {
				return l
			}
		}
		if trust == nil {
			return ""
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		t, err := trust.TrustOf(ctx, id)
		if err != nil {
			return ""
		}
		return of(t.SystemInfo)
	}
}
