package agent

import "github.com/xiaozhi-hub/hub"

// The agent's events and records are the hub's vocabulary (hub.Agent…),
// so that the API serves them without importing this package.
type (
	Event       = hub.AgentEvent
	Usage       = hub.AgentUsage
	RunRecord   = hub.AgentRun
	CallRecord  = hub.AgentCall
	ChatRequest = hub.AgentChatRequest
)

// ChatPath is where the API serves the agent's chat.
const ChatPath = hub.AgentChatPath

func addUsage(u *Usage, o Usage) {
	u.InputTokens += o.InputTokens
	u.OutputTokens += o.OutputTokens
}
