package asr

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/coder/websocket"
	"github.com/xiaozhi-hub/hub"
)

// DashScope is Alibaba Cloud's real-time recognition (Paraformer realtime,
// Fun-ASR realtime) over its WebSocket inference API, with an API key. Wire
// format (https://help.aliyun.com/zh/model-studio/websocket-for-paraformer-real-time-service):
// a run-task JSON event; the server's task-started; binary 16 kHz PCM;
// result-generated events carrying a sentence (sentence_end once final);
// a finish-task event; the server's task-finished (or task-failed with
// error_code and error_message).
type DashScope struct {
	URL      string // default wss://dashscope.aliyuncs.com/api-ws/v1/inference
	APIKey   string
	Model    string // default paraformer-realtime-v2
	Language string // language hint ("zh", "en"); "" lets the model decide
	Timeout  time.Duration
}

type dsHeader struct {
	Action       string `json:"action,omitempty"`
	TaskID       string `json:"task_id"`
	Streaming    string `json:"streaming,omitempty"`
	Event        string `json:"event,omitempty"`
	ErrorCode    string `json:"error_code,omitempty"`
	ErrorMessage string `json:"error_message,omitempty"`
}

// Start opens the task and waits until the service accepts audio.
func (d *DashScope) Start(ctx context.Context, language string) (*Stream, error) {
	url := d.URL
	if url == "" {
		url = DashScopeURL
	}
	model := d.Model
	if model == "" {
		model = DashScopeModel
	}
	if language == "" {
		language = d.Language
	}
	timeout := d.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	where := "DashScope at " + strings.TrimPrefix(strings.TrimPrefix(url, "wss://"), "ws://")
	dctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c, _, err := websocket.Dial(dctx, url, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + d.APIKey}}})
	if err != nil {
		return nil, hub.Errorf(hub.EUNAVAILABLE, "speech recognition (%s): %v", where, err)
	}
	c.SetReadLimit(1 << 20)
	var id [16]byte
	_, _ = rand.Read(id[:])
	taskID := hex.EncodeToString(id[:])
	params := map[string]any{"format": "pcm", "sample_rate": rate}
	if language != "" {
		params["language_hints"] = []string{strings.SplitN(language, "-", 2)[0]}
	}
	run, _ := json.Marshal(map[string]any{
		"header":  dsHeader{Action: "run-task", TaskID: taskID, Streaming: "duplex"},
		"payload": map[string]any{"task_group": "audio", "task": "asr", "function": "recognition", "model": model, "parameters": params, "input": map[string]any{}},
	})
	s := &Stream{c: c, where: where, timeout: timeout}
	fail := func(err error) (*Stream, error) { c.CloseNow(); return nil, err }
	if err := c.Write(dctx, websocket.MessageText, run); err != nil {
		return fail(s.fail(err))
	}
	ev, _, err := readDS(dctx, s)
	if err != nil {
		return fail(err)
	}
	if ev != "task-started" {
		return fail(hub.Errorf(hub.EUNAVAILABLE, "speech recognition (%s) answered %q instead of task-started", where, ev))
	}
	s.finish = func(ctx context.Context, s *Stream) (string, error) {
		end, _ := json.Marshal(map[string]any{"header": dsHeader{Action: "finish-task", TaskID: taskID, Streaming: "duplex"},
			"payload": map[string]any{"input": map[string]any{}}})
		if err := s.c.Write(ctx, websocket.MessageText, end); err != nil {
			return "", s.fail(err)
		}
		var text strings.Builder
		pending := ""
		for {
			ev, sentence, err := readDS(ctx, s)
			if err != nil {
				return "", err
			}
			switch ev {
			case "result-generated":
				if sentence.End {
					text.WriteString(sentence.Text)
					pending = ""
				} else {
					pending = sentence.Text
				}
			case "task-finished":
				return text.String() + pending, nil
			}
		}
	}
	return s, nil
}

type dsSentence struct {
	Text string `json:"text"`
	End  bool   `json:"sentence_end"`
}

// readDS reads the next event; task-failed becomes an error with the
// service's code and message.
func readDS(ctx context.Context, s *Stream) (string, dsSentence, error) {
	for {
		typ, data, err := s.c.Read(ctx)
		if err != nil {
			return "", dsSentence{}, s.fail(err)
		}
		if typ != websocket.MessageText {
			continue
		}
		var m struct {
			Header  dsHeader `json:"header"`
			Payload struct {
				Output struct {
					Sentence dsSentence `json:"sentence"`
				} `json:"output"`
			} `json:"payload"`
		}
		if json.Unmarshal(data, &m) != nil || m.Header.Event == "" {
			return "", dsSentence{}, hub.Errorf(hub.EUNAVAILABLE, "speech recognition (%s) sent something that is not an event: %s", s.where, hub.Truncate(data, 120))
		}
		if m.Header.Event == "task-failed" {
			return "", dsSentence{}, hub.Errorf(hub.EUNAVAILABLE, "speech recognition (%s) failed: %s %s", s.where, m.Header.ErrorCode, hub.Truncate([]byte(m.Header.ErrorMessage), 160))
		}
		return m.Header.Event, m.Payload.Output.Sentence, nil
	}
}
