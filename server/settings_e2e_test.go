package server_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xiaozhi-hub/hub/config"
	"github.com/xiaozhi-hub/hub/server"
)

// setting returns one setting of a GET or PUT /api/settings answer.
func setting(t *testing.T, body map[string]any, name string) map[string]any {
	t.Helper()
	all, _ := body["settings"].(map[string]any)
	v, ok := all[name].(map[string]any)
	if !ok {
		t.Fatalf("no setting %s in %v", name, body)
	}
	return v
}

// The admin reads the live settings with their sources (keys only as set),
// changes tts-voice, and the next spoken turn of a device already talking
// uses it, without a restart; wrong names and values are refused in the
// words of the settings; stored values survive a restart.
func TestLiveSettingsApplyToTheNextTurn(t *testing.T) {
	s := newStandIn(t)
	h := liveHub(t, s, "", nil)
	st, body := h.call("GET", "/api/settings", nil)
	if st != 200 {
		t.Fatalf("GET /api/settings: %d %v", st, body)
	}
	if v := setting(t, body, "agent-provider"); v["value"] != "openai" || v["source"] != "file" {
		t.Fatalf("agent-provider: %v", v)
	}
	if v := setting(t, body, "tts-model"); v["value"] != "" || v["source"] != "default" {
		t.Fatalf("tts-model: %v", v)
	}
	if v := setting(t, body, "tts-api-key"); v["set"] != true || v["value"] != nil {
		t.Fatalf("tts-api-key: %v", v)
	}
	if strings.Contains(fmt.Sprint(body), s.key) {
		t.Fatalf("a key is returned: %v", body)
	}

	for _, bad := range []struct {
		body map[string]any
		want string
	}{
		{map[string]any{"tts-voce": "nova"}, "did you mean tts-voice?"},
		{map[string]any{"conversation-timeout": "soon"}, `conversation-timeout: "soon" is not a duration`},
		{map[string]any{"conversation-timeout": 5}, "conversation-timeout: the value must be a string"},
		{map[string]any{"asr-provider": "whisper"}, `asr-provider: "whisper" is not`},
		{map[string]any{"tts-voice": "nova", "tts-base-url": "ftp://x"}, "tts-base-url"},
	} {
		st, b := h.call("PUT", "/api/settings", bad.body)
		if st != 422 || !strings.Contains(errMessage(b), bad.want) {
			t.Fatalf("PUT %v: %d %v; want 422 saying %q", bad.body, st, b, bad.want)
		}
	}

	c := h.rawDevice("aa:00:00:00:7c:01")
	spokenTurn(t, c)
	if v := s.lastVoice(); v != "alloy" {
		t.Fatalf("first turn spoken in %q", v)
	}
	st, body = h.call("PUT", "/api/settings", map[string]any{"tts-voice": "nova"})
	if v := setting(t, body, "tts-voice"); st != 200 || v["value"] != "nova" || v["source"] != "stored" || v["updated"] == nil {
		t.Fatalf("PUT tts-voice: %d %v", st, body)
	}
	spokenTurn(t, c) // the same conversation: no restart, no reconnection
	if v := s.lastVoice(); v != "nova" {
		t.Fatalf("the turn after the change was spoken in %q, want nova", v)
	}
	// The agent's model too: the next turn's run is the new model's.
	if st, body := h.call("PUT", "/api/settings", map[string]any{"agent-model": "other-model"}); st != 200 {
		t.Fatalf("PUT agent-model: %d %v", st, body)
	}
	spokenTurn(t, c)
	_, runs := h.call("GET", "/api/agent/runs?limit=1", nil)
	if list, _ := runs["runs"].([]any); len(list) != 1 || list[0].(map[string]any)["model"] != "other-model" {
		t.Fatalf("the last run: %v", runs)
	}

	// A key is stored and shown only as set; a wrong one fails the next
	// turn's synthesis, and the test says so in words.
	st, body = h.call("PUT", "/api/settings", map[string]any{"tts-api-key": "sk-wrong"})
	if v := setting(t, body, "tts-api-key"); st != 200 || v["set"] != true || v["source"] != "stored" || strings.Contains(fmt.Sprint(body), "sk-wrong") {
		t.Fatalf("PUT tts-api-key: %d %v", st, body)
	}
	st, body = h.call("POST", "/api/settings/test", map[string]any{"what": "tts"})
	if st != 200 || body["ok"] != false || body["problem"] != "wrong key" || !strings.Contains(fmt.Sprint(body["detail"]), "Incorrect API key") {
		t.Fatalf("test of a wrong tts key: %d %v", st, body)
	}
	// Stored values survive a restart.
	h.stop()
	h = liveHub(t, s, h.dir, nil)
	_, body = h.call("GET", "/api/settings", nil)
	if v := setting(t, body, "tts-voice"); v["value"] != "nova" || v["source"] != "stored" {
		t.Fatalf("tts-voice after a restart: %v", v)
	}
	if v := setting(t, body, "tts-api-key"); v["set"] != true || v["source"] != "stored" {
		t.Fatalf("tts-api-key after a restart: %v", v)
	}
	// null removes a stored value: the file's applies again.
	st, body = h.call("PUT", "/api/settings", map[string]any{"tts-api-key": nil, "tts-voice": nil})
	if v := setting(t, body, "tts-voice"); st != 200 || v["value"] != "alloy" || v["source"] != "file" {
		t.Fatalf("tts-voice removed: %d %v", st, body)
	}
	if st, body = h.call("POST", "/api/settings/test", map[string]any{"what": "tts"}); body["ok"] != true {
		t.Fatalf("test of the file's tts key: %d %v", st, body)
	}
}

// The test button of each provider makes the smallest real request and
// says what failed, in words: a wrong key, an unknown model, an address
// nobody answers; given settings are tried without being stored.
func TestLiveSettingsTest(t *testing.T) {
	s := newStandIn(t)
	h := liveHub(t, s, "", nil)
	for _, c := range []struct {
		body    map[string]any
		problem string
	}{
		{map[string]any{"what": "agent"}, ""},
		{map[string]any{"what": "asr"}, ""},
		{map[string]any{"what": "tts"}, ""},
		{map[string]any{"what": "agent", "settings": map[string]string{"agent-api-key": "sk-wrong"}}, "wrong key"},
		{map[string]any{"what": "asr", "settings": map[string]string{"asr-api-key": "sk-wrong"}}, "wrong key"},
		{map[string]any{"what": "agent", "settings": map[string]string{"agent-model": "nope"}}, "unknown model"},
		{map[string]any{"what": "tts", "settings": map[string]string{"tts-base-url": "http://127.0.0.1:1/v1"}}, "unreachable"},
		{map[string]any{"what": "tts", "settings": map[string]string{"tts-provider": ""}}, "not configured"},
		{map[string]any{"what": "asr", "settings": map[string]string{"asr-provider": "whisper"}}, "invalid settings"},
	} {
		st, body := h.call("POST", "/api/settings/test", c.body)
		if st != 200 || body["ok"] != (c.problem == "") || (c.problem != "" && body["problem"] != c.problem) {
			t.Fatalf("test %v: %d %v; want problem %q", c.body, st, body, c.problem)
		}
	}
	if st, body := h.call("POST", "/api/settings/test", map[string]any{"what": "llm"}); st != 422 {
		t.Fatalf("test of llm: %d %v", st, body)
	}
	// Nothing given to a test is stored.
	_, body := h.call("GET", "/api/settings", nil)
	if v := setting(t, body, "agent-model"); v["value"] != "test-model" || v["source"] != "file" {
		t.Fatalf("agent-model after the tests: %v", v)
	}
}

// Each value's source: a flag, the environment, the config file, the
// default; a value fixed by a flag is refused, saying the flag wins.
func TestLiveSettingsSources(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "hub.yaml")
	if err := os.WriteFile(file, []byte("agent-model: file-model\nagent:\n  provider: openai\n  base-url: http://127.0.0.1:1/v1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"XZ_HUB_ASR_LANGUAGE": "en", "XZ_HUB_DATA_DIR": filepath.Join(dir, "data")}
	getenv := func(k string) string { return env[k] }
	args := []string{"--config", file, "--tts-voice=echo", "--listen", "127.0.0.1:0", "--api-token", "sources-token-0123456789"}
	cfg, err := config.Load(args, getenv)
	if err != nil {
		t.Fatal(err)
	}
	h, err := server.OpenWithSources(context.Background(), cfg, config.Sources(cfg, args, getenv), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	_, body := callURL(t, h.Token, "GET", h.URL()+"/api/settings")
	for name, want := range map[string]string{"tts-voice": "flag", "asr-language": "env", "agent-model": "file", "agent-provider": "file",
		"agent-base-url": "file", "tts-model": "default", "conversation-timeout": "default"} {
		if v := setting(t, body, name); v["source"] != want {
			t.Errorf("%s: %v, want source %s", name, v, want)
		}
	}
	st, body := callURL(t, h.Token, "PUT", h.URL()+"/api/settings", map[string]any{"tts-voice": "nova"})
	if st != 409 || !strings.Contains(errMessage(body), "flag --tts-voice") {
		t.Fatalf("PUT of a flag's setting: %d %v", st, body)
	}
	// A stored value wins over the file's and the environment's.
	st, body = callURL(t, h.Token, "PUT", h.URL()+"/api/settings", map[string]any{"asr-language": "zh", "agent-model": "stored-model"})
	if v := setting(t, body, "asr-language"); st != 200 || v["value"] != "zh" || v["source"] != "stored" {
		t.Fatalf("asr-language: %d %v", st, body)
	}
}
