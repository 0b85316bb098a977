package asr

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/xiaozhi-hub/hub/internal/dashscope"
	"github.com/xiaozhi-hub/hub/voice/driver"
)

// DashScope is Alibaba Cloud's real-time recognition (Paraformer realtime,
// Fun-ASR realtime) over its WebSocket inference API, with an API key
// (https://help.aliyun.com/zh/model-studio/websocket-for-paraformer-real-time-service):
// the task protocol of package internal/dashscope, with task "asr",
// function "recognition", binary 16 kHz PCM in, and result-generated
// events carrying a sentence (sentence_end once final).
type DashScope struct {
	URL      string // default wss://dashscope.aliyuncs.com/api-ws/v1/inference
	APIKey   string
	Model    string // default paraformer-realtime-v2
	Language string // language hint ("zh", "en"); "" lets the model decide
	Timeout  time.Duration
	Client   *http.Client // makes the handshake (nil: the default client)
}

// Start opens the task and waits until the service accepts audio.
func (d *DashScope) Start(ctx context.Context, language string) (driver.Recognition, error) {
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
	dctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	t, err := dashscope.Dial(dctx, d.URL, d.APIKey, "speech recognition", d.Client)
	if err != nil {
		return nil, err
	}
	params := map[string]any{"format": "pcm", "sample_rate": rate}
	if language != "" {
		params["language_hints"] = []string{strings.SplitN(language, "-", 2)[0]}
	}
	if err := t.Run(dctx, "asr", "recognition", model, params); err != nil {
		t.Close()
		return nil, err
	}
	return &stream{up: dashScopeTask{t}, timeout: timeout}, nil
}

// dashScopeTask is one utterance's recognition task.
type dashScopeTask struct{ t *dashscope.Task }

func (d dashScopeTask) writeAudio(ctx context.Context, pcm []byte) error {
	return d.t.WriteAudio(ctx, pcm)
}

// finish joins the final sentences, and the last one not yet final.
func (d dashScopeTask) finish(ctx context.Context) (string, error) {
	if err := d.t.Finish(ctx); err != nil {
		return "", err
	}
	var text strings.Builder
	pending := ""
	var p struct {
		Output struct {
			Sentence struct {
				Text string `json:"text"`
				End  bool   `json:"sentence_end"`
			} `json:"sentence"`
		} `json:"output"`
	}
	for {
		p.Output.Sentence.Text, p.Output.Sentence.End = "", false
		m, err := d.t.Read(ctx, &p)
		if err != nil {
			return "", err
		}
		switch m.Event {
		case "result-generated":
			if s := p.Output.Sentence; s.End {
				text.WriteString(s.Text)
				pending = ""
			} else {
				pending = s.Text
			}
		case "task-finished":
			return text.String() + pending, nil
		}
	}
}

func (d dashScopeTask) close() { d.t.Close() }
