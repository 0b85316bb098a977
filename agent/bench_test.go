package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/xiaozhi-hub/hub/agent"
	"github.com/xiaozhi-hub/hub/catalog"
	ct "github.com/xiaozhi-hub/hub/catalog/catalogtest"
)

// instant is a Provider that answers at once from a brain, so that a
// benchmark measures only the hub's own work per step: offering the tools,
// the system prompt, running the tool calls against the registry and its
// devices, history, events and the run log.
type instant struct{ b brain }

func (instant) Name() string { return agent.ProviderOpenAI }

func (p instant) Chat(_ context.Context, req agent.Request, onText func(string)) (agent.Response, error) {
	tr := turn{}
	for _, t := range req.Tools {
		tr.tools = append(tr.tools, t.Name)
	}
	lastUser := 0
	for i, m := range req.Messages {
		if m.Role == agent.RoleUser && m.Text != "" {
			tr.user, lastUser = m.Text, i
		}
	}
	for _, m := range req.Messages[lastUser+1:] {
		if m.Role == agent.RoleAssistant {
			tr.step++
		}
	}
	for _, r := range req.Messages[len(req.Messages)-1].Results {
		tr.results = append(tr.results, fakeResult{id: r.CallID, name: r.Name, content: r.Content, isError: r.IsError})
	}
	act := p.b(tr)
	resp := agent.Response{Text: act.text}
	for i, c := range act.calls {
		resp.ToolCalls = append(resp.ToolCalls, agent.ToolCall{ID: fmt.Sprint("c", i), Name: c.name, Input: json.RawMessage(argsJSON(c.args))})
	}
	if onText != nil && act.text != "" {
		onText(act.text)
	}
	return resp, nil
}

// fixedBrain is seedBrain without reading the search results, so that the
// benchmark does not count the stand-in model's own JSON parsing.
func fixedBrain(direct bool) brain {
	return func(tr turn) action {
		switch tr.step {
		case 0:
			return action{calls: []fakeCall{{"search_devices", map[string]any{"query": "客厅 灯", "limit": 5}}}}
		case 1:
			if direct {
				return action{calls: []fakeCall{{catalog.Name(lampID, "self.lamp.turn_on"), map[string]any{}}}}
			}
			return action{calls: []fakeCall{{"call_device_tool", map[string]any{"device_id": lampID, "tool": "self.lamp.turn_on", "arguments": map[string]any{}}}}}
		}
		return action{text: "已打开客厅的吸顶灯"}
	}
}

// BenchmarkStep measures the hub's overhead per agent step (one model call
// and the tool calls it asks for), excluding LLM time, on the seed flow
// "打开客厅的灯" (3 steps: search_devices, the lamp's turn_on, the answer).
func BenchmarkStep(b *testing.B) {
	home := ct.Home()
	for _, c := range []struct {
		name  string
		specs []ct.Spec
	}{
		{"direct-3-devices", []ct.Spec{home[0], home[1], home[2]}},
		{"hub-tools-26-devices", home},
	} {
		b.Run(c.name, func(b *testing.B) {
			reg, _ := ct.NewHome(b, c.specs)
			a := agent.NewWithProvider(reg, agent.Config{}, instant{fixedBrain(len(c.specs) <= 8)})
			steps := 0
			for b.Loop() {
				rec, err := a.Run(context.Background(), "bench", "打开客厅的灯", func(agent.Event) {})
				if err != nil || rec.Outcome != agent.OutcomeOK {
					b.Fatalf("%v %+v", err, rec)
				}
				steps += rec.Steps
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(steps), "µs/step")
		})
	}
}

// BenchmarkStepHTTP is the same flow against a local OpenAI-compatible
// server with streaming; it adds the hub's request encoding and stream
// decoding, and loopback HTTP.
func BenchmarkStepHTTP(b *testing.B) {
	f := openaiFake(b, seedBrain)
	reg, _ := ct.NewHome(b, ct.Home())
	a := agent.New(reg, agent.Config{Provider: agent.ProviderOpenAI, APIKey: "test-key", BaseURL: f.srv.URL + "/v1", Model: "m"})
	steps := 0
	var hubMs float64
	for b.Loop() {
		rec, err := a.Run(context.Background(), "bench", "打开客厅的灯", nil)
		if err != nil || rec.Outcome != agent.OutcomeOK {
			b.Fatalf("%v %+v", err, rec)
		}
		steps += rec.Steps
		hubMs += rec.DurationMs - rec.LLMMs
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(steps), "µs/step")
	b.ReportMetric(hubMs*1000/float64(steps), "µs/step-outside-llm-call")
}
