package agent_test

import (
	"bufio"
	"encoding/json"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/xiaozhi-hub/hub/agent"
	ct "github.com/xiaozhi-hub/hub/catalog/catalogtest"
)

func TestChatHandlerStreamsEvents(t *testing.T) {
	a, _, reg, devs := start(t, setup{provider: agent.ProviderOpenAI}, seedBrain)
	hubURL := serve(t, reg, a)
	resp := request(t, "POST", hubURL+agent.ChatPath, `{"message":"打开客厅的灯"}`)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d, type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var names []string
	var done agent.Event
	sc := bufio.NewScanner(resp.Body)
	var event string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
			if len(names) == 0 || names[len(names)-1] != event || event != "text" {
				names = append(names, event)
			}
		case strings.HasPrefix(line, "data: "):
			var e agent.Event
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &e); err != nil || e.Type != event {
				t.Fatalf("data %q for event %s: %v", line, event, err)
			}
			if e.Type == agent.EventDone {
				done = e
			}
		}
	}
	want := []string{"tool_call", "tool_result", "tool_call", "tool_result", "text", "done"}
	if !slices.Equal(names, want) {
		t.Fatalf("events %v, want %v", names, want)
	}
	if done.Outcome != "ok" || done.Session == "" || done.Text != "已打开客厅的吸顶灯" || devs[lampID].State("lamp", "power") != true {
		t.Fatalf("done %+v", done)
	}

	// Continue the session, without streaming.
	resp2 := request(t, "POST", hubURL+agent.ChatPath, `{"message":"再开一次","session":"`+done.Session+`","stream":false}`)
	var rec agent.RunRecord
	if err := json.NewDecoder(resp2.Body).Decode(&rec); err != nil || rec.Session != done.Session || rec.Outcome != "ok" {
		t.Fatalf("JSON answer %+v: %v", rec, err)
	}

	runs := request(t, "GET", hubURL+"/api/agent/runs?limit=1", "")
	var body struct{ Runs []agent.RunRecord }
	if err := json.NewDecoder(runs.Body).Decode(&body); err != nil || len(body.Runs) != 1 || body.Runs[0].ID != rec.ID {
		t.Fatalf("runs %+v: %v", body, err)
	}
}

func TestChatHandlerErrors(t *testing.T) {
	reg := ct.NewRegistry(t)
	unconfigured := serve(t, reg, agent.New(reg, agent.Config{}))
	for _, c := range []struct {
		method string
		body   string
		status int
		want   string
	}{
		// 503 with a code of the hub's own (errors.go), which the client
		// turns into "no model configured".
		{"POST", `{"message":"hi"}`, 503, `"code":"unavailable"`},
		{"POST", `{"message":"hi"}`, 503, "ANTHROPIC_API_KEY"},
		{"GET", ``, 405, "POST"},
	} {
		resp := request(t, c.method, unconfigured+agent.ChatPath, c.body)
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != c.status || !strings.Contains(string(b), c.want) {
			t.Errorf("%s %s: %d %s", c.method, c.body, resp.StatusCode, b)
		}
	}
	a, _, reg2, _ := start(t, setup{provider: agent.ProviderAnthropic}, seedBrain)
	hubURL := serve(t, reg2, a)
	for body, status := range map[string]int{`{"message":""}`: 422, `{"msg":"x"}`: 400, `not json`: 400} {
		resp := request(t, "POST", hubURL+agent.ChatPath, body)
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != status || !strings.Contains(string(b), `"error":{`) {
			t.Errorf("%s: %d %s", body, resp.StatusCode, b)
		}
	}
}

func TestConfigFromEnv(t *testing.T) {
	for _, c := range []struct {
		env      map[string]string
		cfg      agent.Config
		provider string
		model    string
		base     string
		ready    bool
		errHas   string
	}{
		{env: nil, ready: false, errHas: "OPENAI_BASE_URL=http://localhost:11434/v1"},
		{env: map[string]string{"ANTHROPIC_API_KEY": "k"}, provider: "anthropic", model: agent.DefaultAnthropicModel, base: agent.DefaultAnthropicURL, ready: true},
		{env: map[string]string{"ANTHROPIC_AUTH_TOKEN": "t", "ANTHROPIC_BASE_URL": "http://proxy"}, provider: "anthropic", base: "http://proxy", model: agent.DefaultAnthropicModel, ready: true},
		{env: map[string]string{"OPENAI_API_KEY": "k"}, provider: "openai", model: agent.DefaultOpenAIModel, base: agent.DefaultOpenAIURL, ready: true},
		{env: map[string]string{"OPENAI_BASE_URL": "http://localhost:11434/v1", "XZ_AGENT_MODEL": "qwen2.5"}, provider: "openai", model: "qwen2.5", base: "http://localhost:11434/v1", ready: true},
		{env: map[string]string{"OPENAI_BASE_URL": "http://localhost:11434/v1"}, provider: "openai", ready: false, errHas: "XZ_AGENT_MODEL"},
		{env: map[string]string{"ANTHROPIC_API_KEY": "a", "OPENAI_API_KEY": "o", "XZ_AGENT_PROVIDER": "openai"}, provider: "openai", model: agent.DefaultOpenAIModel, base: agent.DefaultOpenAIURL, ready: true},
		{env: map[string]string{"XZ_AGENT_PROVIDER": "anthropic"}, provider: "anthropic", ready: false, errHas: "ANTHROPIC_API_KEY"},
		{env: map[string]string{"XZ_AGENT_PROVIDER": "gemini"}, provider: "gemini", ready: false, errHas: "not anthropic or openai"},
		// The config file wins over the environment.
		{env: map[string]string{"ANTHROPIC_API_KEY": "a"}, cfg: agent.Config{Provider: "openai", APIKey: "file", Model: "deepseek-chat", BaseURL: "https://api.deepseek.com/v1"},
			provider: "openai", model: "deepseek-chat", base: "https://api.deepseek.com/v1", ready: true},
	} {
		cfg := c.cfg.FromEnv(func(k string) string { return c.env[k] })
		a := agent.New(ct.NewRegistry(t), cfg)
		got := a.Config()
		err := a.Ready()
		if (err == nil) != c.ready || (err != nil && !strings.Contains(err.Error(), c.errHas)) || got.Provider != c.provider ||
			(c.ready && (got.Model != c.model || got.BaseURL != c.base)) {
			t.Errorf("env %v cfg %+v: got %s, ready err %v", c.env, c.cfg, got, err)
		}
	}
}
