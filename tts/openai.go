package tts

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/internal/httpx"
	"github.com/xiaozhi-hub/hub/internal/provider"
	"github.com/xiaozhi-hub/hub/voice/driver"
)

// OpenAI is an OpenAI-compatible speech API: POST {base}/audio/speech with
// response_format "pcm" (https://platform.openai.com/docs/api-reference/audio/createSpeech),
// raw 16-bit little-endian mono PCM at 24 kHz, streamed. OpenAI,
// Kokoro-FastAPI, speaches, LocalAI and SiliconFlow accept it; a server
// that sends another rate is configured with SampleRate.
type OpenAI struct {
	BaseURL    string // default https://api.openai.com/v1
	APIKey     string
	Model      string // default tts-1
	Voice      string // default alloy
	SampleRate int    // of the PCM the server sends (default 24000)
	Client     *http.Client
	// MaxSpeech bounds one sentence's audio (default 60 s): a server that
	// never stops costs bounded time and memory.
	MaxSpeech time.Duration
}

// Synthesize starts the speech of text in voice ("": o.Voice). The
// stream ends with ctx.
func (o *OpenAI) Synthesize(ctx context.Context, text, voice string) (driver.Speech, error) {
	if voice == "" {
		voice = o.Voice
	}
	if voice == "" {
		voice = OpenAIVoice
	}
	model := o.Model
	if model == "" {
		model = OpenAIModel
	}
	body, _ := json.Marshal(map[string]any{"model": model, "input": text, "voice": voice, "response_format": "pcm"})
	base := o.BaseURL
	if base == "" {
		base = OpenAIBaseURL
	}
	endpoint := strings.TrimSuffix(base, "/") + "/audio/speech"
	req, err := http.NewRequestWithContext(ctx, "POST", endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, hub.Errorf(hub.EINVALID, "tts-base-url %q: %v", o.BaseURL, err)
	}
	req.Header.Set("Content-Type", "application/json")
	if o.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+o.APIKey)
	}
	c := o.Client
	if c == nil {
		c = httpx.Providers
	}
	res, err := c.Do(req)
	if err != nil {
		return nil, hub.Errorf(hub.EUNAVAILABLE, "speech synthesis at %s: %v", provider.Host(endpoint), err)
	}
	if res.StatusCode/100 != 2 {
		data, _ := io.ReadAll(io.LimitReader(res.Body, 4096))
		res.Body.Close()
		return nil, hub.Errorf(hub.EUNAVAILABLE, "speech synthesis at %s answered %d: %s", provider.Host(endpoint), res.StatusCode, provider.Message(data))
	}
	if ct := res.Header.Get("Content-Type"); strings.HasPrefix(ct, "application/json") || strings.HasPrefix(ct, "text/") {
		data, _ := io.ReadAll(io.LimitReader(res.Body, 4096))
		res.Body.Close()
		return nil, hub.Errorf(hub.EUNAVAILABLE, "speech synthesis at %s answered %s instead of PCM audio: %s", provider.Host(endpoint), ct, provider.Message(data))
	}
	rate := o.SampleRate
	if rate <= 0 {
		rate = 24000
	}
	return &bodySpeech{body: res.Body, rate: rate, left: maxBytes(o.MaxSpeech, rate), endpoint: endpoint}, nil
}

// bodySpeech is the PCM of one synthesis as its response body brings it.
type bodySpeech struct {
	body     io.ReadCloser
	rate     int
	left     int64 // bytes still allowed
	buf      [8192]byte
	pcm      pcmJoin
	endpoint string
}

// SampleRate of the PCM.
func (s *bodySpeech) SampleRate() int { return s.rate }

// Read returns the next chunk of PCM, or io.EOF after the last.
func (s *bodySpeech) Read(ctx context.Context) ([]int16, error) {
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if s.left <= 0 {
			return nil, hub.Errorf(hub.EUNAVAILABLE, "speech synthesis at %s sent more audio than a sentence takes; cut off", provider.Host(s.endpoint))
		}
		n, err := s.body.Read(s.buf[:min(int64(len(s.buf)), s.left)])
		s.left -= int64(n)
		if pcm := s.pcm.samples(s.buf[:n]); pcm != nil {
			return pcm, nil
		}
		if errors.Is(err, io.EOF) {
			return nil, io.EOF
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, hub.Errorf(hub.EUNAVAILABLE, "speech synthesis at %s: %v", provider.Host(s.endpoint), err)
		}
	}
}

// Close ends the stream.
func (s *bodySpeech) Close() { s.body.Close() }
