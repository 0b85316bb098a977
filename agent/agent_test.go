package agent_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/agent"
	"github.com/xiaozhi-hub/hub/catalog"
	ct "github.com/xiaozhi-hub/hub/catalog/catalogtest"
	"github.com/xiaozhi-hub/hub/internal/pipenet"
	"github.com/xiaozhi-hub/hub/registry"
)

const lampID = "aa:00:00:00:00:01" // 吸顶灯 in 客厅

// seedBrain is the seed's flow: search for the device, call its turn-on
// tool, answer in words.
func seedBrain(tr turn) action {
	switch tr.step {
	case 0:
		return action{calls: []fakeCall{{"search_devices", map[string]any{"query": "客厅 灯", "limit": 5}}}}
	case 1:
		var sr catalog.SearchResult
		_ = json.Unmarshal([]byte(tr.results[0].content), &sr)
		if len(sr.Results) == 0 {
			return action{text: "没有找到客厅的灯"}
		}
		d := sr.Results[0]
		for _, tool := range d.Tools {
			if tool.Name != "self.lamp.turn_on" {
				continue
			}
			if slices.Contains(tr.tools, "call_device_tool") {
				return action{calls: []fakeCall{{"call_device_tool", map[string]any{"device_id": d.ID, "tool": tool.Name, "arguments": map[string]any{}}}}}
			}
			return action{calls: []fakeCall{{tool.AgentTool, map[string]any{}}}}
		}
		return action{text: "这个设备不能开灯"}
	default:
		if r := tr.results[0]; r.isError {
			return action{text: "没能打开：" + r.content}
		}
		return action{text: "已打开客厅的吸顶灯"}
	}
}

type setup struct {
	provider string
	specs    []ct.Spec
	cfg      agent.Config
	// net, when set, carries the model API in memory (for synctest).
	net *pipenet.Listener
}

func start(t *testing.T, s setup, b brain) (*agent.Agent, *fakeLLM, *registry.Registry, map[string]*ct.Device) {
	t.Helper()
	var f *fakeLLM
	cfg := s.cfg
	cfg.Provider, cfg.APIKey, cfg.Model = s.provider, "test-key", "test-model"
	var ls []net.Listener
	if s.net != nil {
		ls = []net.Listener{s.net}
		tr := &http.Transport{DialContext: s.net.DialContext}
		t.Cleanup(tr.CloseIdleConnections)
		cfg.HTTPClient = &http.Client{Transport: tr}
	}
	if s.provider == agent.ProviderAnthropic {
		f = anthropicFake(t, b, ls...)
		cfg.BaseURL = f.srv.URL
	} else {
		f = openaiFake(t, b, ls...)
		cfg.BaseURL = f.srv.URL + "/v1"
	}
	if s.specs == nil {
		s.specs = ct.Home()
	}
	reg, devs := ct.NewHome(t, s.specs)
	a := agent.New(reg, cfg)
	if err := a.Ready(); err != nil {
		t.Fatal(err)
	}
	return a, f, reg, devs
}

// collect runs the agent and returns the record and the events.
func collect(t *testing.T, a *agent.Agent, session, msg string) (agent.RunRecord, []agent.Event) {
	t.Helper()
	var events []agent.Event
	rec, err := a.Run(context.Background(), session, msg, func(e agent.Event) { events = append(events, e) })
	if err != nil {
		t.Fatal(err)
	}
	return rec, events
}

func types(events []agent.Event) []string {
	var out []string
	for _, e := range events {
		if e.Type == agent.EventText && len(out) > 0 && out[len(out)-1] == agent.EventText {
			continue
		}
		out = append(out, e.Type)
	}
	return out
}

func TestSeedFlow(t *testing.T) {
	home := ct.Home()
	for _, provider := range []string{agent.ProviderAnthropic, agent.ProviderOpenAI} {
		for _, mode := range []string{"hub-tools", "direct"} {
			for _, stream := range []bool{true, false} {
				name := provider + "/" + mode + map[bool]string{true: "/stream", false: "/json"}[stream]
				t.Run(name, func(t *testing.T) {
					s := setup{provider: provider, cfg: agent.Config{NoStream: !stream}}
					if mode == "direct" {
						s.specs = []ct.Spec{home[0], home[1], home[2]}
					}
					a, f, reg, devs := start(t, s, seedBrain)
					rec, events := collect(t, a, "", "打开客厅的灯")
					if rec.Outcome != agent.OutcomeOK || rec.Steps != 3 || rec.Text != "已打开客厅的吸顶灯" {
						t.Fatalf("run: %+v", rec)
					}
					if devs[lampID].State("lamp", "power") != true {
						t.Fatal("the lamp is not on")
					}
					want := []string{"tool_call", "tool_result", "tool_call", "tool_result", "text", "done"}
					if got := types(events); !slices.Equal(got, want) {
						t.Fatalf("events %v, want %v", got, want)
					}
					var text string
					for _, e := range events {
						if e.Type == agent.EventText {
							text += e.Text
						}
					}
					if done := events[len(events)-1]; text != rec.Text || done.Text != rec.Text || done.Session == "" || done.Outcome != "ok" {
						t.Fatalf("streamed %q, done %+v", text, done)
					}
					if len(rec.Calls) != 2 || rec.Calls[1].DeviceID != lampID || rec.Calls[1].Target != "self.lamp.turn_on" || rec.Calls[1].Outcome != "ok" {
						t.Fatalf("run calls %+v", rec.Calls)
					}
					if n := len(f.requests()); n != 3 {
						t.Fatalf("%d model calls, want 3", n)
					}
					waitCall(t, reg, "self.lamp.turn_on", "agent")
					if runs := a.Runs(nil, 10); len(runs) != 1 || runs[0].ID != rec.ID {
						t.Fatalf("run log %+v", runs)
					}
				})
			}
		}
	}
}

// waitCall waits for the registry's call history to record a call.
func waitCall(t *testing.T, reg *registry.Registry, tool, caller string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		calls, _ := reg.Calls(context.Background(), hub.CallFilter{})
		for _, c := range calls {
			if c.Tool == tool && c.Caller == caller {
				return
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no %s call by %s in the registry's history", tool, caller)
}

func TestValidationErrorsGoBackToTheModel(t *testing.T) {
	for _, provider := range []string{agent.ProviderAnthropic, agent.ProviderOpenAI} {
		t.Run(provider, func(t *testing.T) {
			var seen []fakeResult
			b := func(tr turn) action {
				seen = append(seen, tr.results...)
				call := func(v int) action {
					return action{calls: []fakeCall{{"call_device_tool", map[string]any{"device_id": lampID,
						"tool": "self.audio_speaker.set_volume", "arguments": map[string]any{"volume": v}}}}}
				}
				switch tr.step {
				case 0:
					return call(150)
				case 1:
					if !tr.results[0].isError {
						return action{text: "unexpected success"}
					}
					return call(50)
				}
				return action{text: "音量已调到50"}
			}
			a, _, _, devs := start(t, setup{provider: provider}, b)
			rec, _ := collect(t, a, "", "把客厅吸顶灯的音量调到150")
			if rec.Outcome != "ok" || rec.Text != "音量已调到50" || len(seen) != 2 {
				t.Fatalf("run %+v, results seen %+v", rec, seen)
			}
			if !seen[0].isError || !strings.Contains(seen[0].content, "maximum") || !strings.Contains(seen[0].content, hub.EINVALID) {
				t.Fatalf("the model did not get a clear validation error: %+v", seen[0])
			}
			if rec.Calls[0].Outcome != hub.EINVALID || devs[lampID].State("audio_speaker", "volume") != float64(50) {
				t.Fatalf("calls %+v, volume %v", rec.Calls, devs[lampID].State("audio_speaker", "volume"))
			}
		})
	}
}

func TestArgumentsThatAreNotJSON(t *testing.T) {
	var got fakeResult
	b := func(tr turn) action {
		if tr.step == 0 {
			return action{calls: []fakeCall{{"search_devices", "{not json"}}}
		}
		got = tr.results[0]
		return action{text: "sorry"}
	}
	a, _, _, _ := start(t, setup{provider: agent.ProviderOpenAI}, b)
	rec, _ := collect(t, a, "", "hi")
	if rec.Outcome != "ok" || !got.isError || !strings.Contains(got.content, "JSON object") {
		t.Fatalf("run %+v, result %+v", rec, got)
	}
}

func TestStepLimit(t *testing.T) {
	for _, provider := range []string{agent.ProviderAnthropic, agent.ProviderOpenAI} {
		t.Run(provider, func(t *testing.T) {
			loop := func(turn) action {
				return action{calls: []fakeCall{{"search_devices", map[string]any{"query": "灯"}}}}
			}
			a, f, _, _ := start(t, setup{provider: provider, cfg: agent.Config{MaxSteps: 3}}, loop)
			rec, events := collect(t, a, "s1", "一直搜索")
			if rec.Outcome != agent.OutcomeStepLimit || rec.Steps != 3 || len(f.requests()) != 3 {
				t.Fatalf("run %+v after %d requests", rec, len(f.requests()))
			}
			if e := events[len(events)-2]; e.Type != agent.EventError || e.Code != agent.OutcomeStepLimit {
				t.Fatalf("no step-limit error event: %+v", e)
			}
			// The session stays usable: the fakes check that the history is a valid conversation.
			rec, _ = collect(t, a, "s1", "再试一次")
			if rec.Outcome != agent.OutcomeStepLimit {
				t.Fatalf("second run %+v", rec)
			}
		})
	}
}
