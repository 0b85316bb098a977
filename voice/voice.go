// Package voice holds a device's spoken conversation: the microphone's
// Opus frames in, end-of-speech detection for the three listen modes,
// speech recognition, the agent's answer streamed sentence by sentence
// into speech synthesis, and Opus frames out, paced in real time, with the
// messages the firmware expects around them (stt, llm, tts start,
// sentence_start, tts stop). docs/protocol.md §5.2, §6 and §7.
//
// It is transport-blind: the device session hands it messages and frames
// and gives it an Output to answer through. Providers (recognition,
// synthesis, the model) and the codec are interfaces (the providers' and the
// codec's declared in package driver, named here too), so that the engine
// can be tested and run with any of them; with a part missing,
// every turn still ends properly and says what to configure.
package voice

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/xiaozhi-hub/hub/protocol"
	"github.com/xiaozhi-hub/hub/voice/driver"
)

// Output is how a conversation reaches its device (the device session).
type Output interface {
	// WriteText sends one JSON message.
	WriteText(ctx context.Context, msg []byte) error
	// WriteAudio sends one Opus packet of the downlink.
	WriteAudio(ctx context.Context, opus []byte, timestampMs uint32) error
	// End ends the conversation on the device's side (MQTT: a goodbye
	// with the session id; WebSocket: closing the connection).
	End(reason string)
}

// The parts the engine is given, declared in package driver so that their
// providers need not import the engine.
type (
	// Recognizer turns speech into text (package asr).
	Recognizer = driver.Recognizer
	// Recognition is one utterance being recognised.
	Recognition = driver.Recognition
	// OpusWriter is a Recognition that takes the device's Opus packets.
	OpusWriter = driver.OpusWriter
	// OpusRecognizer is a Recognizer whose recognitions may take Opus.
	OpusRecognizer = driver.OpusRecognizer
	// Synthesizer turns text into speech (package tts).
	Synthesizer = driver.Synthesizer
	// Speech is synthesised audio as it arrives.
	Speech = driver.Speech
)

// Brain answers what the person said (the built-in agent): deltas of the
// answer's text as the model writes them, and the whole answer.
type Brain interface {
	// Ready says why the brain cannot answer (nil: it can).
	Ready() error
	Answer(ctx context.Context, t Turn, onText func(delta string)) (string, error)
}

// Turn is what the brain is asked.
type Turn struct {
	DeviceID string // the device spoken to: "this device"
	Language string
	Text     string
}

// The Opus codec (package opus), declared in package driver.
type (
	// Codec makes the Opus coders of one conversation.
	Codec = driver.Codec
	// Decoder decodes one Opus packet.
	Decoder = driver.Decoder
	// Encoder encodes exactly one frame of PCM into one packet.
	Encoder = driver.Encoder
)

// VAD tells speech from silence in 16 kHz PCM, frame by frame.
type VAD interface {
	// Push takes the next frame and reports whether speech is going on,
	// and whether an utterance just ended (speech followed by enough
	// silence).
	Push(pcm []int16) (speaking, ended bool)
	Reset()
}

// Options configures an Engine. Codec is required for audio; without a
// Recognizer, Synthesizer or a ready Brain every turn says what is missing.
type Options struct {
	Codec       Codec
	Recognizer  Recognizer
	Synthesizer Synthesizer
	Brain       Brain
	// NewVAD makes the end-of-speech detector of auto and realtime modes.
	NewVAD func() VAD
	// Voice is the synthesis voice (per device: VoiceOf).
	Voice   string
	VoiceOf func(deviceID string) string
	// LanguageOf is the language a device reported at its OTA check
	// ("en-US"), asked once per conversation when its hello said none;
	// Language the hub's default (the asr-language setting). The hub's
	// own words (what to configure, what failed) follow the first of the
	// hello's, LanguageOf, Language; Chinese when none is known.
	// Recognition is given Language when set (the person who set it chose
	// it), else the device's.
	LanguageOf func(deviceID string) string
	Language   string
	// Silence ends a conversation with no speech for this long (default
	// 120 s, as the firmware's own channel timeout).
	Silence time.Duration
	// MaxUtterance bounds one utterance (default 30 s); MaxTurn bounds the
	// answer (model and speech, default 2 min).
	MaxUtterance, MaxTurn time.Duration
	// Lead is how far ahead of real time audio is sent (default 300 ms;
	// the device queues at most 40 packets, 2.4 s).
	Lead time.Duration
	// SpeakingDelay is how long after tts start the first audio waits
	// (default 150 ms; negative: none, for measurements): the device
	// applies tts start on its main loop and drops audio that arrives
	// before it is speaking.
	SpeakingDelay time.Duration
	// Parts, if set, gives the parts the hub's settings may change while
	// it runs (package livesettings): it is asked at each conversation's
	// open (the silence limit, what is missing), at each utterance
	// (recognition, language) and at each sentence spoken (synthesis,
	// voice), and replaces Recognizer, Synthesizer, Voice, Language and
	// Silence, so that a change applies from the next turn on. It is
	// asked for one device: a home's own settings apply to its devices.
	Parts func(deviceID string) Parts
	// OnTurn receives the record of every finished turn (for the event
	// log and metrics); it must not block.
	OnTurn func(TurnRecord)
	Logger *slog.Logger
}

// Parts are the providers and the settings of the engine that may change
// while it runs (Options.Parts). Silence 0 is the default, 120 s.
type Parts struct {
	Recognizer  Recognizer
	Synthesizer Synthesizer
	Voice       string
	Language    string
	Silence     time.Duration
	// Unready, if set, is why the Brain cannot answer with these settings
	// (no model); it replaces Brain.Ready.
	Unready error
}

// parts returns the current parts: Options.Parts' or the fixed ones.
func (e *Engine) parts(deviceID string) Parts {
	if e.opts.Parts == nil {
		p := Parts{Recognizer: e.opts.Recognizer, Synthesizer: e.opts.Synthesizer,
			Voice: e.opts.Voice, Language: e.opts.Language, Silence: e.opts.Silence}
		if e.opts.Brain != nil {
			p.Unready = e.opts.Brain.Ready()
		}
		return p
	}
	p := e.opts.Parts(deviceID)
	if p.Silence <= 0 {
		p.Silence = defaultSilence
	}
	return p
}

// defaultSilence is the firmware's own channel timeout.
const defaultSilence = 120 * time.Second

// TurnRecord is what one turn heard, said and spent.
type TurnRecord struct {
	DeviceID string `json:"deviceId"`
	Heard    string `json:"heard"`            // recognised text
	Answer   string `json:"answer,omitempty"` // the sentences spoken
	// Outcome: ok, empty (nothing was said), aborted, not_configured, or
	// the stage that failed: recognition_failed, answer_failed, speech_failed.
	Outcome string `json:"outcome"`
	Error   string `json:"error,omitempty"`
	// Stage durations, in milliseconds, from the end of the utterance:
	// recognition (the final text), the model's first sentence, the first
	// audio frame out; and the whole turn.
	RecognitionMs   float64 `json:"recognitionMs"`
	FirstSentenceMs float64 `json:"firstSentenceMs,omitempty"`
	FirstAudioMs    float64 `json:"firstAudioMs,omitempty"`
	TotalMs         float64 `json:"totalMs"`
}

// Engine holds every open conversation and owns the goroutines of their
// utterances and turns.
type Engine struct {
	active atomic.Int64
	opts   Options
	log    *slog.Logger
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// New returns an Engine; it starts nothing until a conversation opens.
func New(opts Options) *Engine {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&opts.Silence, defaultSilence)
	def(&opts.MaxUtterance, 30*time.Second)
	def(&opts.MaxTurn, 2*time.Minute)
	def(&opts.Lead, 300*time.Millisecond)
	if opts.SpeakingDelay == 0 {
		opts.SpeakingDelay = 150 * time.Millisecond
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Engine{opts: opts, log: opts.Logger, ctx: ctx, cancel: cancel}
}

// Close ends every turn in progress and waits for the goroutines of the
// conversations; their silence timers do nothing afterwards.
func (e *Engine) Close() {
	e.cancel()
	e.wg.Wait()
}

// ErrNotConfigured is why a turn could not be answered in speech.
var ErrNotConfigured = errors.New("voice is not configured on this hub")

// missing says what the engine lacks to hold a spoken conversation, in
// the words of the settings; "" when nothing.
func (e *Engine) missing(p Parts) string {
	var need []string
	if p.Recognizer == nil {
		need = append(need, "asr-provider")
	}
	if p.Synthesizer == nil {
		need = append(need, "tts-provider")
	}
	if e.opts.Brain == nil || p.Unready != nil {
		need = append(need, "agent-provider")
	}
	if len(need) == 0 && e.opts.Codec == nil {
		return "an Opus codec (this build has none)"
	}
	return strings.Join(need, ", ")
}

// OpenOption adjusts one conversation.
type OpenOption func(*Conversation)

// EchoUncancelled is for devices that leave echo cancellation to the
// server (firmware built with server AEC says features.aec in its hello):
// the hub does not cancel echo, so in realtime mode it does not listen
// while it speaks, lest the device's own voice interrupt the answer. The
// wake word and the button still abort.
func EchoUncancelled() OpenOption { return func(c *Conversation) { c.halfDuplex = true } }

// Open starts the conversation of a device whose hello was just answered,
// with the downlink audio announced in the server hello; language is the
// hello's ("" when it said none). It starts no goroutine: the
// conversation's silence limit is a timer, and a goroutine runs only
// while a person speaks and is answered.
func (e *Engine) Open(deviceID, language string, downlink protocol.AudioParams, out Output, opts ...OpenOption) *Conversation {
	c := newConversation(e, deviceID, language, downlink, out)
	for _, o := range opts {
		o(c)
	}
	e.active.Add(1)
	c.mu.Lock()
	c.silence = time.AfterFunc(c.silenceFor, c.silent)
	c.mu.Unlock()
	return c
}

// Active is how many conversations are open.
func (e *Engine) Active() int { return int(e.active.Load()) }
