package tts

import "github.com/xiaozhi-hub/hub/internal/dashscope"

// What each provider uses when its settings leave the address, the model or
// the voice empty.
const (
	OpenAIBaseURL  = "https://api.openai.com/v1"
	OpenAIModel    = "tts-1"
	OpenAIVoice    = "alloy"
	DashScopeURL   = dashscope.URL
	DashScopeModel = "cosyvoice-v2"
	DashScopeVoice = "longxiaochun_v2"
)
