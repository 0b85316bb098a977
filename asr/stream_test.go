package asr

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/voice/driver"
)

// wsServer runs handle for each WebSocket connection.
func wsServer(t testing.TB, handle func(r *http.Request, c *websocket.Conn)) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{"binary"}})
		if err != nil {
			return
		}
		defer c.CloseNow()
		handle(r, c)
	}))
	t.Cleanup(srv.Close)
	return "ws" + strings.TrimPrefix(srv.URL, "http")
}

// samplesOf counts PCM samples in binary frames until a text frame, which
// it returns.
func samplesOf(t *testing.T, c *websocket.Conn) (int, int16, []byte) {
	n, last := 0, int16(0)
	for {
		typ, data, err := c.Read(context.Background())
		if err != nil {
			return n, last, nil
		}
		if typ == websocket.MessageText {
			return n, last, data
		}
		n += len(data) / 2
		last = int16(binary.LittleEndian.Uint16(data[len(data)-2:]))
	}
}

func speak(t *testing.T, s driver.Recognition) {
	for i := range 10 {
		pcm := make([]int16, 960)
		pcm[959] = int16(i + 1)
		if err := s.Write(pcm); err != nil {
			t.Fatal(err)
		}
	}
}

// FunASR: the offline-mode announcement, the PCM as sent, the end of
// speech, and the final text back.
func TestFunASR(t *testing.T) {
	url := wsServer(t, func(r *http.Request, c *websocket.Conn) {
		_, first, _ := c.Read(context.Background())
		var hello map[string]any
		_ = json.Unmarshal(first, &hello)
		if hello["mode"] != "offline" || hello["is_speaking"] != true || hello["audio_fs"] != float64(16000) || hello["wav_format"] != "pcm" {
			t.Errorf("first message %s", first)
		}
		n, last, end := samplesOf(t, c)
		if n != 9600 || last != 10 || string(end) != `{"is_speaking":false}` {
			t.Errorf("audio %d samples (last %d), then %s", n, last, end)
		}
		_ = c.Write(context.Background(), websocket.MessageText, []byte(`{"mode":"offline","text":"打开客厅的灯","wav_name":"xiaozhi","is_final":true}`))
	})
	s, err := (&FunASR{URL: url}).Start(context.Background(), "zh")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	speak(t, s)
	if text, err := s.Finish(context.Background()); err != nil || text != "打开客厅的灯" {
		t.Fatalf("Finish = %q %v", text, err)
	}
	// A server that is not there, or never answers.
	if _, err := (&FunASR{URL: "ws://127.0.0.1:1", Timeout: time.Second}).Start(context.Background(), ""); hub.ErrorCode(err) != hub.EUNAVAILABLE {
		t.Fatalf("no server: %v", err)
	}
	silent := wsServer(t, func(r *http.Request, c *websocket.Conn) { samplesOf(t, c); <-r.Context().Done() })
	s, _ = (&FunASR{URL: silent, Timeout: 300 * time.Millisecond}).Start(context.Background(), "")
	defer s.Close()
	if _, err := s.Finish(context.Background()); hub.ErrorCode(err) != hub.EUNAVAILABLE {
		t.Fatalf("a server that never answers: %v", err)
	}
}

// DashScope: the API key, run-task with the model, format and language,
// the PCM, finish-task; the sentences of result-generated joined; a
// task-failed becomes an error with the service's message.
func TestDashScope(t *testing.T) {
	url := wsServer(t, func(r *http.Request, c *websocket.Conn) {
		ctx := context.Background()
		if r.Header.Get("Authorization") != "Bearer sk-ds" {
			t.Errorf("Authorization %q", r.Header.Get("Authorization"))
		}
		_, run, _ := c.Read(ctx)
		var m struct {
			Header  map[string]string `json:"header"`
			Payload struct {
				Model      string         `json:"model"`
				Task       string         `json:"task"`
				Parameters map[string]any `json:"parameters"`
			} `json:"payload"`
		}
		_ = json.Unmarshal(run, &m)
		task := m.Header["task_id"]
		if m.Header["action"] != "run-task" || m.Payload.Model != "paraformer-realtime-v2" || m.Payload.Task != "asr" ||
			m.Payload.Parameters["format"] != "pcm" || m.Payload.Parameters["sample_rate"] != float64(16000) || len(task) != 32 {
			t.Errorf("run-task %s", run)
		}
		event := func(ev, extra string) {
			_ = c.Write(ctx, websocket.MessageText, []byte(`{"header":{"task_id":"`+task+`","event":"`+ev+`","attributes":{}},"payload":{`+extra+`}}`))
		}
		event("task-started", "")
		n, _, finish := samplesOf(t, c)
		if n != 9600 || !strings.Contains(string(finish), `"finish-task"`) {
			t.Errorf("audio %d samples, then %s", n, finish)
		}
		event("result-generated", `"output":{"sentence":{"text":"打开","sentence_end":false}}`)
		event("result-generated", `"output":{"sentence":{"text":"打开客厅的灯。","sentence_end":true}}`)
		event("result-generated", `"output":{"sentence":{"text":"谢谢","sentence_end":false}}`)
		event("task-finished", "")
	})
	s, err := (&DashScope{URL: url, APIKey: "sk-ds"}).Start(context.Background(), "zh-CN")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	speak(t, s)
	if text, err := s.Finish(context.Background()); err != nil || text != "打开客厅的灯。谢谢" {
		t.Fatalf("Finish = %q %v", text, err)
	}
	failing := wsServer(t, func(r *http.Request, c *websocket.Conn) {
		_, _, _ = c.Read(context.Background())
		_ = c.Write(context.Background(), websocket.MessageText, []byte(`{"header":{"task_id":"x","event":"task-failed","error_code":"InvalidApiKey","error_message":"Invalid API-key provided."},"payload":{}}`))
	})
	if _, err := (&DashScope{URL: failing}).Start(context.Background(), ""); hub.ErrorCode(err) != hub.EUNAVAILABLE || !strings.Contains(err.Error(), "InvalidApiKey") {
		t.Fatalf("task-failed: %v", err)
	}
}
