package livesettings

import (
	"context"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/agent"
)

// LLM is the agent's model as the settings say now: an agent.Provider
// that sends each request to the current provider, with the current
// model, so that the agent (agent.NewWithProvider) follows changes at its
// next model call. A request made for a device's voice (its context's
// principal is hub.DevicePrincipal) goes to the model of the device's
// home's settings (For). A request whose context carries a prompt
// (WithPrompt: the device's persona and memory) has it before the
// agent's own.
type LLM struct{ s *Service }

// LLM returns the service's agent.Provider.
func (s *Service) LLM() LLM { return LLM{s} }

// Name is the current provider's name ("" when none is set).
func (l LLM) Name() string { return l.s.Current().Agent.Provider }

// Model is the current model's name, for the agent's run records.
func (l LLM) Model() string { return l.s.Current().Agent.Model }

// Ready is nil when the settings name a usable model, else an
// EUNAVAILABLE error saying what to set.
func (l LLM) Ready() error { return l.s.Current().LLMErr }

// Chat sends req to the current provider with the current model.
func (l LLM) Chat(ctx context.Context, req agent.Request, onText func(string)) (agent.Response, error) {
	c := l.s.For(voiceHome(ctx))
	if c.LLM == nil {
		return agent.Response{}, c.LLMErr
	}
	req.Model = c.Agent.Model
	if p, _ := ctx.Value(promptKey{}).(string); p != "" {
		req.System = p + "\n\n" + req.System
	}
	return c.LLM.Chat(ctx, req, onText)
}

// voiceHome is the home of the device whose voice ctx acts for; "" for
// anyone else (their requests use the hub's settings).
func voiceHome(ctx context.Context) string {
	if p := hub.PrincipalFrom(ctx); p != nil && p.Device != "" {
		for home := range p.Homes {
			return home
		}
	}
	return ""
}

type promptKey struct{}

// WithPrompt returns ctx carrying text the model is given before the
// agent's own system prompt (who it is on this device, what it remembers).
func WithPrompt(ctx context.Context, text string) context.Context {
	return context.WithValue(ctx, promptKey{}, text)
}
