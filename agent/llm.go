package agent

import (
	"bytes"
	"context"
	"encoding/json"
)

// Provider is one LLM API with tool use: the Anthropic Messages API or an
// OpenAI-compatible chat completions API (OpenAI, DeepSeek, Qwen, Ollama, …).
// The agent loop sees only these provider-neutral types.
type Provider interface {
	// Name is "anthropic" or "openai".
	Name() string
	// Chat sends one request. When onText is non-nil the response is
	// streamed and onText receives text as it arrives.
	Chat(ctx context.Context, req Request, onText func(string)) (Response, error)
}

// Request is one model call.
type Request struct {
	Model     string
	System    string
	MaxTokens int
	Messages  []Message
	Tools     []ToolDef
}

// Message is one turn of a conversation. A user turn has Text or Results
// (the answers to the previous assistant turn's tool calls); an assistant
// turn has Text, ToolCalls or both.
type Message struct {
	Role      string       `json:"role"` // RoleUser or RoleAssistant
	Text      string       `json:"text,omitempty"`
	ToolCalls []ToolCall   `json:"toolCalls,omitempty"`
	Results   []ToolResult `json:"results,omitempty"`
}

// Roles.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
)

// ToolDef is a tool offered to the model.
type ToolDef struct {
	Name        string
	Description string
	Schema      json.RawMessage // JSON Schema, "type":"object"
}

// ToolCall is the model asking for a tool. Input is the arguments as the
// model wrote them; they may not be valid JSON.
type ToolCall struct {
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

// ToolResult answers one ToolCall.
type ToolResult struct {
	CallID  string `json:"callId"`
	Name    string `json:"name"`
	Content string `json:"content"`
	IsError bool   `json:"isError"`
}

// Response is the model's answer.
type Response struct {
	Text       string
	ToolCalls  []ToolCall
	StopReason string // as the provider said it: end_turn, tool_use, stop, tool_calls, max_tokens, length, …
	Usage      Usage
}

// objectOrEmpty returns raw if it is a JSON object, else {} (Anthropic
// requires tool_use input to be an object, even when the model wrote
// something else).
func objectOrEmpty(raw json.RawMessage) json.RawMessage {
	t := bytes.TrimSpace(raw)
	if len(t) > 0 && t[0] == '{' && json.Valid(t) {
		return t
	}
	return json.RawMessage("{}")
}
