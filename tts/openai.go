// Package tts holds the speech synthesis providers of spoken
// conversations. Each streams 16-bit mono PCM as it is synthesised, so
// that playback starts before a sentence is complete.
//
// OpenAI speaks the OpenAI-compatible POST {base}/audio/speech with
// response_format "pcm" (https://platform.openai.com/docs/api-reference/audio/createSpeech):
// raw 16-bit little-endian mono PCM at 24 kHz, streamed. OpenAI,
// Kokoro-FastAPI, speaches, LocalAI and SiliconFlow accept it; a server
// that sends another rate is configured with SampleRate.
package tts

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/xiaozhi-hub/hub"
)

// OpenAI is an OpenAI-compatible speech API.
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
func (o *OpenAI) Synthesize(ctx context.Context, text, voice string) (*Stream, error) {
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
		c = http.DefaultClient
	}
	res, err := c.Do(req)
	if err != nil {
		return nil, hub.Errorf(hub.EUNAVAILABLE, "speech synthesis at %s: %v", host(endpoint), err)
	}
	if res.StatusCode/100 != 2 {
		data, _ := io.ReadAll(io.LimitReader(res.Body, 4096))
		res.Body.Close()
		return nil, hub.Errorf(hub.EUNAVAILABLE, "speech synthesis at %s answered %d: %s", host(endpoint), res.StatusCode, providerMessage(data))
	}
	if ct := res.Header.Get("Content-Type"); strings.HasPrefix(ct, "application/json") || strings.HasPrefix(ct, "text/") {
		data, _ := io.ReadAll(io.LimitReader(res.Body, 4096))
		res.Body.Close()
		return nil, hub.Errorf(hub.EUNAVAILABLE, "speech synthesis at %s answered %s instead of PCM audio: %s", host(endpoint), ct, providerMessage(data))
	}
	rate := o.SampleRate
	if rate <= 0 {
		rate = 24000
	}
	max := o.MaxSpeech
	if max <= 0 {
		max = 60 * time.Second
	}
	return &Stream{body: res.Body, rate: rate, left: int64(max.Seconds() * float64(rate) * 2), endpoint: endpoint}, nil
}

// Stream is the PCM of one synthesis as it arrives.
type Stream struct {
	body     io.ReadCloser
	rate     int
	left     int64 // bytes still allowed
	buf      [8192]byte
	odd      []byte // a byte of a sample split across reads
	endpoint string
}

// SampleRate of the PCM.
func (s *Stream) SampleRate() int { return s.rate }

// Read returns the next chunk of PCM, or io.EOF after the last.
func (s *Stream) Read(ctx context.Context) ([]int16, error) {
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if s.left <= 0 {
			return nil, hub.Errorf(hub.EUNAVAILABLE, "speech synthesis at %s sent more audio than a sentence takes; cut off", host(s.endpoint))
		}
		n, err := s.body.Read(s.buf[:min(int64(len(s.buf)), s.left)])
		s.left -= int64(n)
		b := append(s.odd, s.buf[:n]...)
		s.odd = nil
		if len(b)%2 == 1 {
			s.odd = []byte{b[len(b)-1]}
			b = b[:len(b)-1]
		}
		if len(b) > 0 {
			pcm := make([]int16, len(b)/2)
			for i := range pcm {
				pcm[i] = int16(binary.LittleEndian.Uint16(b[2*i:]))
			}
			return pcm, nil
		}
		if errors.Is(err, io.EOF) {
			return nil, io.EOF
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, hub.Errorf(hub.EUNAVAILABLE, "speech synthesis at %s: %v", host(s.endpoint), err)
		}
	}
}

// Close ends the stream.
func (s *Stream) Close() { s.body.Close() }

func host(endpoint string) string {
	if u, err := url.Parse(endpoint); err == nil {
		return u.Host
	}
	return "the provider"
}

func providerMessage(body []byte) string {
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil && e.Error.Message != "" {
		return hub.Truncate([]byte(e.Error.Message), 200)
	}
	return hub.Truncate(body, 200)
}
