package hub

import (
	"encoding/json"
	"time"
)

// The built-in agent's vocabulary, as people and programs see it over
// the API (package agent runs the agent, package api serves it).

// AgentChatPath is where the API serves the agent's chat.
const AgentChatPath = "/api/agent/chat"

// AgentChatRequest is the body of POST /api/agent/chat.
type AgentChatRequest struct {
	Message string `json:"message"`
	// Session continues a conversation; empty starts one (its id is in the
	// done event).
	Session string `json:"session,omitempty"`
	// Stream false answers with one JSON object (the run record) instead of
	// Server-Sent Events.
	Stream *bool `json:"stream,omitempty"`
}

// AgentEvent is one step of a run as it happens. Type is one of the
// agent's EventToolCall, EventToolResult, EventText, EventDone, EventError.
type AgentEvent struct {
	Type string `json:"type"`
	Step int    `json:"step,omitempty"`
	// tool_call and tool_result
	ID         string          `json:"id,omitempty"`
	Name       string          `json:"name,omitempty"`
	Arguments  json.RawMessage `json:"arguments,omitempty"`
	DeviceID   string          `json:"deviceId,omitempty"`
	Target     string          `json:"target,omitempty"`
	IsError    bool            `json:"isError,omitempty"`
	Code       string          `json:"code,omitempty"`
	Content    string          `json:"content,omitempty"`
	DurationMs float64         `json:"durationMs,omitempty"`
	// text (a delta) and done (the whole answer)
	Text string `json:"text,omitempty"`
	// done
	Session string      `json:"session,omitempty"`
	RunID   int64       `json:"runId,omitempty"`
	Steps   int         `json:"steps,omitempty"`
	Outcome string      `json:"outcome,omitempty"`
	Usage   *AgentUsage `json:"usage,omitempty"`
	// error
	Message string `json:"message,omitempty"`
}

// AgentUsage counts tokens.
type AgentUsage struct {
	InputTokens  int `json:"inputTokens"`
	OutputTokens int `json:"outputTokens"`
}

// AgentRun is what one run of the agent did. The registry separately
// records each device call (with Caller "agent") in the hub's call history.
type AgentRun struct {
	ID      int64  `json:"id"`
	Session string `json:"session"`
	// By says who asked ("agent for alice", "voice of <id>"); User is the
	// person the run acted for ("" for the admin and a device's voice).
	By       string    `json:"by,omitempty"`
	User     string    `json:"user,omitempty"`
	Input    string    `json:"input"`
	Provider string    `json:"provider"`
	Model    string    `json:"model"`
	Started  time.Time `json:"started"`
	// DurationMs is the whole run; LLMMs the part spent waiting for the model.
	DurationMs float64     `json:"durationMs"`
	LLMMs      float64     `json:"llmMs"`
	Steps      int         `json:"steps"` // model calls
	Outcome    string      `json:"outcome"`
	Error      string      `json:"error,omitempty"`
	Text       string      `json:"text"`
	Calls      []AgentCall `json:"calls"`
	Usage      AgentUsage  `json:"usage"`
}

// AgentCall is one tool call of a run.
type AgentCall struct {
	Step       int     `json:"step"`
	ID         string  `json:"id"`
	Name       string  `json:"name"`
	DeviceID   string  `json:"deviceId,omitempty"`
	Target     string  `json:"target,omitempty"`
	Arguments  string  `json:"arguments"` // truncated
	Result     string  `json:"result"`    // truncated
	Outcome    string  `json:"outcome"`   // "ok" or an error code
	DurationMs float64 `json:"durationMs"`
}
