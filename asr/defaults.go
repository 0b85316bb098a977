package asr

import "github.com/xiaozhi-hub/hub/internal/dashscope"

// What each provider uses when its settings leave the address or the model
// empty.
const (
	OpenAIBaseURL  = "https://api.openai.com/v1"
	OpenAIModel    = "whisper-1"
	DashScopeURL   = dashscope.URL
	DashScopeModel = "paraformer-realtime-v2"
)
