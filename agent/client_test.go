package agent_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/xiaozhi-hub/hub/agent"
	ct "github.com/xiaozhi-hub/hub/catalog/catalogtest"
)

func TestChatClientPrintsSteps(t *testing.T) {
	a, _, reg, _ := start(t, setup{provider: agent.ProviderAnthropic}, seedBrain)
	hubURL := serve(t, reg, a)

	var out strings.Builder
	done, err := agent.Chat(context.Background(), http.DefaultClient, hubURL, apiToken, agent.ChatRequest{Message: "打开客厅的灯"}, agent.Printer(&out))
	if err != nil || done.Outcome != "ok" {
		t.Fatalf("chat: %v %+v", err, done)
	}
	got := out.String()
	for _, want := range []string{
		`→ search_devices {"limit":5,"query":"客厅 灯"}`,
		"← search_devices ok",
		`→ call_device_tool {"arguments":{},"device_id":"aa:00:00:00:00:01","tool":"self.lamp.turn_on"}`,
		"← call_device_tool ok [aa:00:00:00:00:01 self.lamp.turn_on]",
		"已打开客厅的吸顶灯\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
}

func TestChatClientErrors(t *testing.T) {
	reg := ct.NewRegistry(t)
	hubURL := serve(t, reg, agent.New(reg, agent.Config{}))
	noAgent := httptest.NewServer(http.NotFoundHandler())
	defer noAgent.Close()
	for _, c := range []struct{ url, token, want string }{
		{hubURL, apiToken, "OPENAI_BASE_URL=http://localhost:11434/v1"},
		{hubURL, "wrong-token", "refused the API token"},
		{noAgent.URL, apiToken, "has no agent endpoint"},
		{"http://127.0.0.1:1", apiToken, "cannot reach the hub"},
	} {
		_, err := agent.Chat(context.Background(), http.DefaultClient, c.url, c.token, agent.ChatRequest{Message: "hi"}, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.url, err, c.want)
		}
	}
}
