package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/xiaozhi-hub/hub/server"
)

// standIn stands in for an OpenAI-compatible provider at the edge for the
// live settings, persona and memory tests, over the real wire formats:
// transcription (what the person says next, in order), chat completions
// (streamed for turns, whole for the memory and the settings test) and
// speech (PCM). A wrong key is OpenAI's 401; the model "nope" its 404.
type standIn struct {
	t   *testing.T
	srv *httptest.Server
	key string
	// homeKey is a home owner's own key, accepted as well as key.
	homeKey string

	mu      sync.Mutex
	says    []string // what the recognizer hears, one per utterance (then "Hello there.")
	voices  []string // the voice of each synthesis
	keys    []string // the key of each synthesis
	systems []string // the system prompt of each turn's model call
}

func newStandIn(t *testing.T, says ...string) *standIn {
	s := &standIn{t: t, key: "sk-live", says: says}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

// memoryFact is what the stand-in model keeps when it hears "Tom".
const memoryFact = "The person's cat is called Tom."

func (s *standIn) serve(w http.ResponseWriter, r *http.Request) {
	key := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	if key != s.key && (s.homeKey == "" || key != s.homeKey) {
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"error":{"message":"Incorrect API key provided: sk-w***. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`)
		return
	}
	switch r.URL.Path {
	case "/v1/audio/transcriptions":
		s.mu.Lock()
		text := "Hello there."
		if len(s.says) > 0 {
			text, s.says = s.says[0], s.says[1:]
		}
		s.mu.Unlock()
		b, _ := json.Marshal(map[string]string{"text": text})
		_, _ = w.Write(b)
	case "/v1/chat/completions":
		s.chat(w, r)
	case "/v1/audio/speech":
		var req struct{ Input, Voice string }
		_ = json.NewDecoder(r.Body).Decode(&req)
		s.mu.Lock()
		s.voices = append(s.voices, req.Voice)
		s.keys = append(s.keys, key)
		s.mu.Unlock()
		w.Header().Set("Content-Type", "audio/pcm")
		_, _ = w.Write(make([]byte, 2*24000/5)) // 200 ms of silence at 24 kHz
	default:
		s.t.Errorf("unexpected %s %s", r.Method, r.URL.Path)
		http.NotFound(w, r)
	}
}

func (s *standIn) chat(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model    string `json:"model"`
		Messages []struct {
			Role    string `json:"role"`
			Content any    `json:"content"`
		} `json:"messages"`
		Stream bool `json:"stream"`
	}
	_ = json.NewDecoder(r.Body).Decode(&req)
	if req.Model == "nope" {
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"error":{"message":"The model `+"`nope`"+` does not exist or you do not have access to it.","type":"invalid_request_error","param":null,"code":"model_not_found"}}`)
		return
	}
	system := fmt.Sprint(req.Messages[0].Content)
	last := fmt.Sprint(req.Messages[len(req.Messages)-1].Content)
	var reply string
	switch {
	case strings.Contains(system, "You keep the memory"):
		if strings.Contains(last, "Tom") {
			reply = memoryFact
		}
	case strings.Contains(system, memoryFact):
		reply = "Your cat is called Tom."
	default:
		reply = "I do not know."
	}
	if !strings.Contains(system, "You keep the memory") && req.Stream {
		s.mu.Lock()
		s.systems = append(s.systems, system)
		s.mu.Unlock()
	}
	if !req.Stream {
		b, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"message": map[string]string{"role": "assistant", "content": reply}, "finish_reason": "stop"}}})
		_, _ = w.Write(b)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	for _, delta := range []string{`{"content":` + quote(reply) + `}`, `{}`} {
		finish := ""
		if delta == `{}` {
			finish = "stop"
		}
		d, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"delta": json.RawMessage(delta), "finish_reason": finish}}})
		fmt.Fprintf(w, "data: %s\n\n", d)
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
}

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }

func (s *standIn) lastVoice() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.voices) == 0 {
		return ""
	}
	return s.voices[len(s.voices)-1]
}

// lastSpeech is the voice and key of the last synthesis.
func (s *standIn) lastSpeech() (voice, key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.voices) == 0 {
		return "", ""
	}
	return s.voices[len(s.voices)-1], s.keys[len(s.keys)-1]
}

func (s *standIn) lastSystem() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.systems) == 0 {
		return ""
	}
	return s.systems[len(s.systems)-1]
}

// liveHub runs a hub whose agent, recognition and synthesis are s.
func liveHub(t *testing.T, s *standIn, dir string, edit func(*server.Config)) *testHub {
	return startHub(t, dir, s.config(edit))
}

// config sets a hub's agent, recognition and synthesis to s, then edit.
func (s *standIn) config(edit func(*server.Config)) func(*server.Config) {
	return func(c *server.Config) {
		base := s.srv.URL + "/v1"
		c.AgentProvider, c.AgentBaseURL, c.AgentAPIKey, c.AgentModel = "openai", base, s.key, "test-model"
		c.ASRProvider, c.ASRBaseURL, c.ASRAPIKey = "openai", base, s.key
		c.TTSProvider, c.TTSBaseURL, c.TTSAPIKey, c.TTSVoice = "openai", base, s.key, "alloy"
		if edit != nil {
			edit(c)
		}
	}
}

// spokenTurn has a person press the button of device c, speak and let go,
// and returns the sentences the device is shown until tts stop.
func spokenTurn(t *testing.T, c *websocket.Conn) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	send(t, c, `{"session_id":"s","type":"listen","state":"start","mode":"manual"}`)
	for _, f := range speech(t) {
		if err := c.Write(ctx, websocket.MessageBinary, f); err != nil {
			t.Fatal(err)
		}
	}
	send(t, c, `{"session_id":"s","type":"listen","state":"stop"}`)
	var said []string
	for {
		typ, data, err := c.Read(ctx)
		if err != nil {
			t.Fatalf("read: %v (sentences so far %v)", err, said)
		}
		if typ != websocket.MessageText {
			continue
		}
		var m struct{ Type, State, Text string }
		_ = json.Unmarshal(data, &m)
		switch {
		case m.Type == "tts" && m.State == "sentence_start":
			said = append(said, m.Text)
		case m.Type == "tts" && m.State == "stop":
			return strings.Join(said, " ")
		}
	}
}
