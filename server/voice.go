package server

import (
	"context"

	"github.com/xiaozhi-hub/hub/agent"
	"github.com/xiaozhi-hub/hub/protocol"
	"github.com/xiaozhi-hub/hub/session"
	"github.com/xiaozhi-hub/hub/voice"
)

// voiceConversations serves the device sessions' conversations with the
// voice engine.
type voiceConversations struct{ e *voice.Engine }

func (v voiceConversations) Open(deviceID, language string, down protocol.AudioParams, out session.ConversationOutput) session.Conversation {
	return v.e.Open(deviceID, language, down, out)
}

// agentBrain answers spoken turns with the built-in agent.
type agentBrain struct{ a *agent.Agent }

func (b agentBrain) Ready() error { return b.a.Ready() }

func (b agentBrain) Answer(ctx context.Context, t voice.Turn, onText func(string)) (string, error) {
	return b.a.Speak(ctx, t.DeviceID, t.Text, onText)
}
