package tts

import (
	"context"
	"io"
	"net/http"
	"time"

	"github.com/xiaozhi-hub/hub/internal/dashscope"
	"github.com/xiaozhi-hub/hub/voice/driver"
)

// DashScope is Alibaba Cloud's CosyVoice speech synthesis over its
// WebSocket inference API, with an API key
// (https://help.aliyun.com/zh/model-studio/cosyvoice-websocket-api): the
// task protocol of package internal/dashscope, with task "tts", function
// "SpeechSynthesizer", model, voice, format pcm and the sample rate; the
// text in continue-task, then finish-task; binary audio as it is
// synthesised, until task-finished.
type DashScope struct {
	URL        string // default wss://dashscope.aliyuncs.com/api-ws/v1/inference
	APIKey     string
	Model      string // default cosyvoice-v2
	Voice      string // default longxiaochun_v2
	SampleRate int    // default 24000
	MaxSpeech  time.Duration
	Client     *http.Client // makes the handshake (nil: the default client)
}

// Synthesize starts the speech of text in voice ("": d.Voice).
func (d *DashScope) Synthesize(ctx context.Context, text, voice string) (driver.Speech, error) {
	model, rate := d.Model, d.SampleRate
	if model == "" {
		model = DashScopeModel
	}
	if voice == "" {
		voice = d.Voice
	}
	if voice == "" {
		voice = DashScopeVoice
	}
	if rate <= 0 {
		rate = 24000
	}
	t, err := dashscope.Dial(ctx, d.URL, d.APIKey, "speech synthesis", d.Client)
	if err != nil {
		return nil, err
	}
	err = t.Run(ctx, "tts", "SpeechSynthesizer", model,
		map[string]any{"text_type": "PlainText", "voice": voice, "format": "pcm", "sample_rate": rate})
	if err == nil {
		err = t.Continue(ctx, map[string]any{"text": text})
	}
	if err == nil {
		err = t.Finish(ctx)
	}
	if err != nil {
		t.Close()
		return nil, err
	}
	return &taskSpeech{t: t, rate: rate, left: maxBytes(d.MaxSpeech, rate)}, nil
}

// taskSpeech is the PCM of one synthesis task.
type taskSpeech struct {
	t    *dashscope.Task
	rate int
	left int64 // bytes still allowed
	pcm  pcmJoin
	done bool
}

// SampleRate of the PCM.
func (s *taskSpeech) SampleRate() int { return s.rate }

// Read returns the next chunk of PCM, or io.EOF after task-finished.
func (s *taskSpeech) Read(ctx context.Context) ([]int16, error) {
	for !s.done {
		m, err := s.t.Read(ctx, nil)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, err
		}
		if m.Event != "" {
			s.done = m.Event == "task-finished"
			continue
		}
		if s.left -= int64(len(m.Audio)); s.left < 0 {
			return nil, s.t.Errorf("sent more audio than a sentence takes; cut off")
		}
		if pcm := s.pcm.samples(m.Audio); pcm != nil {
			return pcm, nil
		}
	}
	return nil, io.EOF
}

// Close ends the connection.
func (s *taskSpeech) Close() { s.t.Close() }
