package asr

// What each provider uses when its settings leave the address or the model
// empty.
const (
	OpenAIBaseURL  = "https://api.openai.com/v1"
	OpenAIModel    = "whisper-1"
	DashScopeURL   = "wss://dashscope.aliyuncs.com/api-ws/v1/inference"
	DashScopeModel = "paraformer-realtime-v2"
)
