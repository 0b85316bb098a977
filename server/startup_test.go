package server_test

import (
	"testing"

	"github.com/xiaozhi-hub/hub/server"
)

// The startup line names the model and the address each speech provider
// will really use, its defaults included (not an empty model, nor OpenAI's
// address for DashScope).
func TestStartupNamesTheSpeechProvidersDefaults(t *testing.T) {
	h := startHub(t, "", func(c *server.Config) {
		c.ASRProvider, c.ASRAPIKey = "openai", "sk-test"
		c.TTSProvider, c.TTSAPIKey = "dashscope", "sk-test"
	})
	got := h.Startup().Speech
	want := "recognition openai whisper-1 at https://api.openai.com/v1; synthesis dashscope cosyvoice-v2 at wss://dashscope.aliyuncs.com/api-ws/v1/inference"
	if got != want {
		t.Errorf("startup speech line:\n got %s\nwant %s", got, want)
	}
}
