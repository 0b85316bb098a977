package dashboard_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/xiaozhi-hub/hub/server"
	"github.com/xiaozhi-hub/hub/sim"
)

// fakeLLM is an OpenAI-compatible chat completions endpoint with a fixed
// plan: first call the offered tool whose name contains "set_volume" with
// volume 25, then, once its result is in, answer in words.
func fakeLLM(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Stream   bool `json:"stream"`
			Messages []struct {
				Role string `json:"role"`
			} `json:"messages"`
			Tools []struct {
				Function struct {
					Name string `json:"name"`
				} `json:"function"`
			} `json:"tools"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		answered := false
		for _, m := range req.Messages {
			answered = answered || m.Role == "tool"
		}
		tool := ""
		for _, tl := range req.Tools {
			if strings.Contains(tl.Function.Name, "set_volume") {
				tool = tl.Function.Name
			}
		}
		var msg map[string]any
		finish := "stop"
		if !answered && tool != "" {
			finish = "tool_calls"
			msg = map[string]any{"role": "assistant", "tool_calls": []any{map[string]any{"index": 0, "id": "call_1", "type": "function",
				"function": map[string]any{"name": tool, "arguments": `{"volume":25}`}}}}
		} else {
			msg = map[string]any{"role": "assistant", "content": "The volume is 25 now."}
		}
		usage := map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
		if !req.Stream {
			json.NewEncoder(w).Encode(map[string]any{"id": "x", "object": "chat.completion", "model": "fake",
				"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}}, "usage": usage})
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for _, c := range []map[string]any{
			{"choices": []any{map[string]any{"index": 0, "delta": msg}}},
			{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": finish}}},
			{"choices": []any{}, "usage": usage},
		} {
			c["id"], c["object"], c["model"] = "x", "chat.completion.chunk", "fake"
			b, _ := json.Marshal(c)
			fmt.Fprintf(w, "data: %s\n\n", b)
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	return srv
}

// The agent's chat shows the question, each tool step and the answer.
func TestBrowserAgentChat(t *testing.T) {
	llm := fakeLLM(t)
	h := startHub(t, func(c *server.Config) {
		c.AgentProvider, c.AgentModel, c.AgentAPIKey, c.AgentBaseURL = "openai", "fake", "test-key", llm.URL+"/v1"
	})
	d := connect(t, h, sim.Config{DeviceID: mcpID})
	b := newBrowser(t, h.URL(), 390, "zh-CN")
	b.login()
	b.waitJS("the device listed", `document.querySelector("li.device")`)
	b.run(chromedp.SendKeys("#chatInput", "把音量调到25", chromedp.ByQuery),
		chromedp.Click(`#chatForm button`, chromedp.ByQuery))
	b.waitJS("the answer", `document.querySelector("#chatLog .msg.answer") && document.querySelector("#chatLog").textContent.includes("完成")`)
	var steps []string
	b.eval(`[...document.querySelectorAll("#chatLog .msg")].map(e => e.className + ": " + e.textContent)`, &steps)
	b.shot("chat")
	all := strings.Join(steps, "\n")
	for _, want := range []string{"msg me: 把音量调到25", "msg step tr: → " + mcpID + ": self.audio_speaker.set_volume {\"volume\":25}",
		"msg step tr: ← " + mcpID + ": self.audio_speaker.set_volume：true", "msg answer: The volume is 25 now."} {
		if !strings.Contains(all, want) {
			t.Fatalf("chat shows\n%s\nwant %q", all, want)
		}
	}
	waitFor(t, "the volume to be 25", func() bool { return d.Volume() == 25 })
	checkFits(t, b, 390)
}
