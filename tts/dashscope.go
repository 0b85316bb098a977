package tts

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/coder/websocket"
	"github.com/xiaozhi-hub/hub"
)

// DashScope is Alibaba Cloud's CosyVoice speech synthesis over its
// WebSocket inference API, with an API key. Wire format
// (https://help.aliyun.com/zh/model-studio/cosyvoice-websocket-api): a
// run-task event (task "tts", function "SpeechSynthesizer", model, voice,
// format pcm, sample rate); the server's task-started; continue-task with
// the text; finish-task; binary audio frames as they are synthesised; the
// server's task-finished (or task-failed with error_code and
// error_message).
type DashScope struct {
	URL        string // default wss://dashscope.aliyuncs.com/api-ws/v1/inference
	APIKey     string
	Model      string // default cosyvoice-v2
	Voice      string // default longxiaochun_v2
	SampleRate int    // default 24000
	MaxSpeech  time.Duration
}

type dsHeader struct {
	Action       string `json:"action,omitempty"`
	TaskID       string `json:"task_id"`
	Streaming    string `json:"streaming,omitempty"`
	Event        string `json:"event,omitempty"`
	ErrorCode    string `json:"error_code,omitempty"`
	ErrorMessage string `json:"error_message,omitempty"`
}

// Synthesize starts the speech of text in voice ("": d.Voice).
func (d *DashScope) Synthesize(ctx context.Context, text, voice string) (*WSStream, error) {
	url := d.URL
	if url == "" {
		url = DashScopeURL
	}
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
	where := strings.TrimPrefix(strings.TrimPrefix(url, "wss://"), "ws://")
	c, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + d.APIKey}}})
	if err != nil {
		return nil, hub.Errorf(hub.EUNAVAILABLE, "speech synthesis (DashScope at %s): %v", where, err)
	}
	c.SetReadLimit(1 << 20)
	s := &WSStream{c: c, rate: rate, where: "DashScope at " + where}
	max := d.MaxSpeech
	if max <= 0 {
		max = 60 * time.Second
	}
	s.left = int64(max.Seconds() * float64(rate) * 2)
	var id [16]byte
	_, _ = rand.Read(id[:])
	task := hex.EncodeToString(id[:])
	send := func(v any) error {
		b, _ := json.Marshal(v)
		return c.Write(ctx, websocket.MessageText, b)
	}
	fail := func(err error) (*WSStream, error) { c.CloseNow(); return nil, err }
	if err := send(map[string]any{"header": dsHeader{Action: "run-task", TaskID: task, Streaming: "duplex"},
		"payload": map[string]any{"task_group": "audio", "task": "tts", "function": "SpeechSynthesizer", "model": model,
			"parameters": map[string]any{"text_type": "PlainText", "voice": voice, "format": "pcm", "sample_rate": rate},
			"input":      map[string]any{}}}); err != nil {
		return fail(s.fail(err))
	}
	for {
		typ, data, err := c.Read(ctx)
		if err != nil {
			return fail(s.fail(err))
		}
		if typ != websocket.MessageText {
			continue
		}
		ev, err := s.event(data)
		if err != nil {
			return fail(err)
		}
		if ev == "task-started" {
			break
		}
	}
	if err := send(map[string]any{"header": dsHeader{Action: "continue-task", TaskID: task, Streaming: "duplex"},
		"payload": map[string]any{"input": map[string]any{"text": text}}}); err != nil {
		return fail(s.fail(err))
	}
	if err := send(map[string]any{"header": dsHeader{Action: "finish-task", TaskID: task, Streaming: "duplex"},
		"payload": map[string]any{"input": map[string]any{}}}); err != nil {
		return fail(s.fail(err))
	}
	return s, nil
}

// WSStream is the PCM of one synthesis over a WebSocket.
type WSStream struct {
	c     *websocket.Conn
	rate  int
	where string
	left  int64  // bytes still allowed
	odd   []byte // a byte of a sample split across frames
	done  bool
}

// SampleRate of the PCM.
func (s *WSStream) SampleRate() int { return s.rate }

// Read returns the next chunk of PCM, or io.EOF after task-finished.
func (s *WSStream) Read(ctx context.Context) ([]int16, error) {
	for !s.done {
		typ, data, err := s.c.Read(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, s.fail(err)
		}
		if typ == websocket.MessageText {
			ev, err := s.event(data)
			if err != nil {
				return nil, err
			}
			if ev == "task-finished" {
				s.done = true
			}
			continue
		}
		if s.left -= int64(len(data)); s.left < 0 {
			return nil, hub.Errorf(hub.EUNAVAILABLE, "speech synthesis (%s) sent more audio than a sentence takes; cut off", s.where)
		}
		b := append(s.odd, data...)
		s.odd = nil
		if len(b)%2 == 1 {
			s.odd = []byte{b[len(b)-1]}
			b = b[:len(b)-1]
		}
		if len(b) == 0 {
			continue
		}
		pcm := make([]int16, len(b)/2)
		for i := range pcm {
			pcm[i] = int16(binary.LittleEndian.Uint16(b[2*i:]))
		}
		return pcm, nil
	}
	return nil, io.EOF
}

// Close ends the connection.
func (s *WSStream) Close() { _ = s.c.CloseNow() }

func (s *WSStream) event(data []byte) (string, error) {
	var m struct {
		Header dsHeader `json:"header"`
	}
	if json.Unmarshal(data, &m) != nil || m.Header.Event == "" {
		return "", hub.Errorf(hub.EUNAVAILABLE, "speech synthesis (%s) sent something that is not an event: %s", s.where, hub.Truncate(data, 120))
	}
	if m.Header.Event == "task-failed" {
		return "", hub.Errorf(hub.EUNAVAILABLE, "speech synthesis (%s) failed: %s %s", s.where, m.Header.ErrorCode, hub.Truncate([]byte(m.Header.ErrorMessage), 160))
	}
	return m.Header.Event, nil
}

func (s *WSStream) fail(err error) error {
	return hub.Errorf(hub.EUNAVAILABLE, "speech synthesis (%s): %v", s.where, err)
}
