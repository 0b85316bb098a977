package agent_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/agent"
	"github.com/xiaozhi-hub/hub/catalog"
	ct "github.com/xiaozhi-hub/hub/catalog/catalogtest"
	"github.com/xiaozhi-hub/hub/internal/pipenet"
)

// The lamp drops its connection while the agent's call to it is in flight:
// the model gets a device_disconnected tool error and says so.
func TestDeviceGoesOfflineMidRun(t *testing.T) {
	for _, provider := range []string{agent.ProviderAnthropic, agent.ProviderOpenAI} {
		t.Run(provider, func(t *testing.T) {
			a, f, _, devs := start(t, setup{provider: provider}, seedBrain)
			lamp := devs[lampID]
			release := lamp.Hold()
			defer release()
			f.hook = func(tr turn) {
				if tr.step != 1 {
					return
				}
				go func() { // once the call reaches the device, the device goes
					for len(lamp.Calls()) == 0 {
						time.Sleep(time.Millisecond)
					}
					lamp.Disconnect()
				}()
			}
			rec, events := collect(t, a, "", "打开客厅的灯")
			if rec.Outcome != agent.OutcomeOK || len(rec.Calls) != 2 || rec.Calls[1].Outcome != hub.EGONE {
				t.Fatalf("run %+v", rec)
			}
			if !strings.HasPrefix(rec.Text, "没能打开：device_disconnected") {
				t.Fatalf("the model was not told: %q", rec.Text)
			}
			var sawErr bool
			for _, e := range events {
				sawErr = sawErr || (e.Type == agent.EventToolResult && e.IsError && e.Code == hub.EGONE)
			}
			if !sawErr {
				t.Fatal("no tool_result error event")
			}
			// Asked again, the device is offline: a clear error before any call.
			rec, _ = collect(t, a, "", "打开客厅的灯")
			if len(rec.Calls) != 2 || rec.Calls[1].Outcome != hub.EOFFLINE || !strings.Contains(rec.Text, "device_offline") {
				t.Fatalf("second run %+v", rec)
			}
		})
	}
}

// Two tool calls in one answer run at the same time.
func TestParallelToolCalls(t *testing.T) {
	home := ct.Home()
	bedside := home[6].ID // 床头灯
	b := func(tr turn) action {
		if tr.step == 0 {
			return action{calls: []fakeCall{
				{catalog.Name(lampID, "self.lamp.turn_on"), map[string]any{}},
				{catalog.Name(bedside, "self.lamp.turn_on"), map[string]any{}},
			}}
		}
		return action{text: "两盏灯都开了"}
	}
	a, _, _, devs := start(t, setup{provider: agent.ProviderAnthropic, specs: []ct.Spec{home[0], home[6]}}, b)
	r1, r2 := devs[lampID].Hold(), devs[bedside].Hold()
	var together atomic.Bool
	go func() {
		deadline := time.Now().Add(3 * time.Second)
		for time.Now().Before(deadline) {
			if len(devs[lampID].Calls()) == 1 && len(devs[bedside].Calls()) == 1 {
				together.Store(true) // both calls are waiting at once
				break
			}
			time.Sleep(time.Millisecond)
		}
		r1()
		r2()
	}()
	rec, _ := collect(t, a, "", "打开所有的灯")
	if !together.Load() {
		t.Fatal("the two tool calls did not run in parallel")
	}
	if rec.Outcome != "ok" || len(rec.Calls) != 2 || rec.Calls[0].Outcome != "ok" || rec.Calls[1].Outcome != "ok" {
		t.Fatalf("run %+v", rec)
	}
	if devs[lampID].State("lamp", "power") != true || devs[bedside].State("lamp", "power") != true {
		t.Fatal("not both lamps are on")
	}
}

// A session keeps its conversation, trimmed to MaxHistory at user turns.
func TestSessionHistory(t *testing.T) {
	var lastUsers []string
	b := func(tr turn) action {
		lastUsers = append(lastUsers, tr.user)
		if tr.step == 0 {
			return action{calls: []fakeCall{{"search_devices", map[string]any{"query": tr.user}}}}
		}
		return action{text: "好的：" + tr.user}
	}
	a, f, _, _ := start(t, setup{provider: agent.ProviderOpenAI, cfg: agent.Config{MaxHistory: 8}}, b)
	for _, msg := range []string{"一", "二", "三", "四"} {
		if rec, _ := collect(t, a, "kitchen", msg); rec.Outcome != "ok" {
			t.Fatalf("run %q: %+v", msg, rec)
		}
	}
	reqs := f.requests()
	last := reqs[len(reqs)-1]["messages"].([]any)
	var users []string
	for _, m := range last {
		if mm := obj(m); str(mm["role"]) == "user" {
			users = append(users, str(mm["content"]))
		}
	}
	// Each run adds 4 messages (user, assistant+call, results, answer): with
	// 8 kept, the last request holds the two previous runs and the current one.
	if strings.Join(users, ",") != "二,三,四" {
		t.Fatalf("user messages in the last request: %v", users)
	}
	// Another session starts empty.
	collect(t, a, "other", "五")
	reqs = f.requests()
	if n := len(reqs[len(reqs)-2]["messages"].([]any)); n != 2 { // system + user
		t.Fatalf("a new session sent %d messages", n)
	}
}

// A run whose device call never ends stops at the run's timeout. In a
// synctest bubble, with the model API in memory, the timeout's clock moves
// only while everything waits on the held device, so a loaded machine
// cannot spend it on the model requests.
func TestRunTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, f, _, devs := start(t, setup{provider: agent.ProviderAnthropic, cfg: agent.Config{Timeout: 300 * time.Millisecond}, net: pipenet.Listen()}, seedBrain)
		release := devs[lampID].Hold()
		defer release()
		rec, events := collect(t, a, "", "打开客厅的灯")
		if rec.Outcome != agent.OutcomeTimeout || len(f.requests()) != 2 {
			t.Fatalf("run %+v", rec)
		}
		if e := events[len(events)-2]; e.Type != agent.EventError || e.Code != agent.OutcomeTimeout {
			t.Fatalf("events end with %+v", events[len(events)-2:])
		}
	})
}

func TestProviderErrors(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if hits.Add(1) == 1 { // overloaded once: retried
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(529)
			fmt.Fprint(w, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
			return
		}
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`)
	}))
	defer srv.Close()
	a := agent.New(ct.NewRegistry(t), agent.Config{Provider: agent.ProviderAnthropic, APIKey: "wrong", BaseURL: srv.URL})
	rec, events := collect(t, a, "", "hi")
	if rec.Outcome != agent.OutcomeError || hits.Load() != 2 {
		t.Fatalf("run %+v after %d requests", rec, hits.Load())
	}
	for _, want := range []string{"HTTP 401", "authentication_error", "invalid x-api-key", "ANTHROPIC_API_KEY"} {
		if !strings.Contains(rec.Error, want) {
			t.Errorf("error %q lacks %q", rec.Error, want)
		}
	}
	if e := events[0]; e.Type != agent.EventError || e.Message != rec.Error {
		t.Fatalf("events %+v", events)
	}

	unreachable := agent.New(ct.NewRegistry(t), agent.Config{Provider: agent.ProviderOpenAI, APIKey: "k",
		BaseURL: "http://127.0.0.1:1/v1", Model: "m"})
	rec, _ = collect(t, unreachable, "", "hi")
	if rec.Outcome != agent.OutcomeError || !strings.Contains(rec.Error, "openai API") {
		t.Fatalf("unreachable provider: %+v", rec)
	}
}

// memHistory stands in for the cluster's shared conversations; failing, it
// answers every read and write with an error.
type memHistory struct {
	mu      sync.Mutex
	m       map[string][]byte
	failing bool
}

func (h *memHistory) LoadHistory(_ context.Context, session string) ([]byte, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.failing {
		return nil, errors.New("nats: timeout")
	}
	return h.m[session], nil
}

func (h *memHistory) SaveHistory(_ context.Context, session string, data []byte) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.failing {
		return errors.New("nats: timeout")
	}
	h.m[session] = data
	return nil
}

// Two agents sharing their conversations (two hub nodes) go on with each
// other's; when the shared copy cannot be read, a run goes on with its own.
func TestSharedConversations(t *testing.T) {
	b := func(tr turn) action { return action{text: "好的：" + tr.user} }
	shared := &memHistory{m: map[string][]byte{}}
	a, f, reg, _ := start(t, setup{provider: agent.ProviderOpenAI, cfg: agent.Config{Shared: shared}}, b)
	other := agent.New(reg, a.Config())
	users := func() string {
		reqs := f.requests()
		var out []string
		for _, m := range reqs[len(reqs)-1]["messages"].([]any) {
			if mm := obj(m); str(mm["role"]) == "user" {
				out = append(out, str(mm["content"]))
			}
		}
		return strings.Join(out, ",")
	}
	for _, step := range []struct {
		on   *agent.Agent
		msg  string
		want string
	}{{a, "一", "一"}, {other, "二", "一,二"}, {a, "三", "一,二,三"}} {
		if rec, _ := collect(t, step.on, "kitchen", step.msg); rec.Outcome != "ok" {
			t.Fatalf("run %q: %+v", step.msg, rec)
		}
		if got := users(); got != step.want {
			t.Fatalf("run %q sent the questions %q; want %q", step.msg, got, step.want)
		}
	}
	shared.mu.Lock()
	shared.failing = true
	shared.mu.Unlock()
	if rec, _ := collect(t, other, "kitchen", "四"); rec.Outcome != "ok" || users() != "一,二,四" {
		t.Fatalf("with the shared copy failing: %+v, questions %q; want the run on this agent's own copy (一,二,四)", rec, users())
	}
}
