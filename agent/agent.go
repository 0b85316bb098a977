// Package agent is the hub's built-in LLM agent: a person says "打开客厅的灯",
// the model finds the device, calls its tool with the right arguments, and
// answers in words. One provider-neutral loop runs over the Anthropic
// Messages API or any OpenAI-compatible chat completions API (both written
// over net/http, streamed), with the hub's devices as tools (package
// catalog). Tool calls the model asks for together run in parallel; invalid
// arguments and device failures go back to the model as tool errors. Runs
// are bounded in steps, time and result size; conversations are kept per
// session with a limit; every run is recorded.
//
// Entry points: Agent.Run and Agent.Runs, which the admin API (package api)
// serves as POST /api/agent/chat (Server-Sent Events) and GET
// /api/agent/runs; Chat is the client of the first.
package agent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/catalog"
	"github.com/xiaozhi-hub/hub/registry"
)

// Agent runs conversations against the registry's devices. It is safe for
// concurrent use; runs of one session are serialised.
type Agent struct {
	cfg      Config
	provider Provider
	cfgErr   error
	cat      *catalog.Catalog
	sessions *sessions
	runs     *runLog
}

// New returns an agent over reg. cfg is completed with FromEnv(os.Getenv)
// by the caller if the environment should count. An agent without a usable
// model still answers: Ready says what to configure.
func New(reg *registry.Registry, cfg Config) *Agent {
	cfg, p, err := cfg.withDefaults()
	return newAgent(reg, cfg, p, err)
}

// NewWithProvider returns an agent over reg that uses p (tests, or a
// provider of one's own); cfg's provider fields are ignored.
func NewWithProvider(reg *registry.Registry, cfg Config, p Provider) *Agent {
	cfg.Provider = p.Name()
	if cfg.Model == "" {
		cfg.Model = "test"
	}
	cfg, _, _ = cfg.withDefaults()
	return newAgent(reg, cfg, p, nil)
}

func newAgent(reg *registry.Registry, cfg Config, p Provider, err error) *Agent {
	if err != nil {
		// Not the caller's fault: this hub has no model set up.
		err = &hub.Error{Code: hub.EUNAVAILABLE, Message: hub.ErrorMessage(err), Err: err}
	}
	return &Agent{
		cfg: cfg, provider: p, cfgErr: err,
		cat: catalog.New(reg, catalog.Options{
			AllowUserOnly: cfg.AllowUserOnly, DirectLimit: cfg.DirectLimit,
			MaxResultBytes: cfg.MaxResultBytes, Caller: "agent", Services: cfg.Services,
		}),
		sessions: newSessions(cfg.MaxSessions, cfg.MaxHistory, cfg.SessionTTL, cfg.Now),
		runs:     newRunLog(cfg.RunLog),
	}
}

// Catalog returns the agent's catalog of the devices' tools, for another
// user of the same devices to share (catalog.Catalog.With).
func (a *Agent) Catalog() *catalog.Catalog { return a.cat }

// Close releases the agent's registry subscription. Runs in progress
// continue.
func (a *Agent) Close() { a.cat.Close() }

// Ready returns nil when a model is configured, or an EUNAVAILABLE error
// whose message says exactly what to set.
func (a *Agent) Ready() error { return a.cfgErr }

// Config returns the completed configuration.
func (a *Agent) Config() Config { return a.cfg }

// Event types.
const (
	EventToolCall   = "tool_call"
	EventToolResult = "tool_result"
	EventText       = "text"
	EventDone       = "done"
	EventError      = "error"
)

// Run outcomes.
const (
	OutcomeOK        = "ok"
	OutcomeStepLimit = "step_limit"
	OutcomeTimeout   = "timeout"
	OutcomeCanceled  = "canceled"
	OutcomeError     = "llm_error"
)

// Run answers one message in a session (a new session when session is
// ""), calling emit for each event as it happens (from one goroutine at a
// time). It returns the run's record, whose Session names the session. It
// fails only before the run starts (no model, empty message); failures
// during the run end it with an error event and an outcome.
//
// The run acts for the principal ctx carries (hub.PrincipalFrom), as the
// agent (hub.Principal.AsAgent): its system prompt and tools list only the
// devices that principal sees, its calls are checked and recorded as that
// principal's, and its sessions are that person's own (another person's
// session id starts a new conversation). Without a principal it is the
// hub's own run and sees every device.
func (a *Agent) Run(ctx context.Context, session, message string, emit func(Event)) (RunRecord, error) {
	return a.run(ctx, session, message, "", emit)
}

// Speak answers what a person said aloud to a device: the run belongs to
// the device's own conversation (its history is kept per device), and the
// model is told which device it speaks through, so that "this device" or
// "声音大一点" reaches that one while "打开客厅的灯" reaches any; ctx carries
// the device's own principal (hub.DevicePrincipal). It returns
// the answer's text; onText receives it as the model writes it. A run that
// ends without an answer returns the reason as an error.
func (a *Agent) Speak(ctx context.Context, deviceID, message string, onText func(string)) (string, error) {
	rec, err := a.run(ctx, "device:"+deviceID, message, deviceID, func(e Event) {
		if e.Type == EventText && onText != nil {
			onText(e.Text)
		}
	})
	if err != nil {
		return "", err
	}
	if rec.Outcome != OutcomeOK {
		return rec.Text, hub.Errorf(hub.EUNAVAILABLE, "%s", rec.Error)
	}
	return rec.Text, nil
}

func (a *Agent) run(ctx context.Context, session, message, speaker string, emit func(Event)) (RunRecord, error) {
	if a.cfgErr != nil {
		return RunRecord{}, a.cfgErr
	}
	message = strings.TrimSpace(message)
	if message == "" {
		return RunRecord{}, hub.Errorf(hub.EINVALID, "message is empty: say what the agent should do, e.g. 打开客厅的灯")
	}
	if session == "" {
		session = newSessionID()
	}
	var by, user string
	if p := hub.PrincipalFrom(ctx); p != nil {
		p = p.AsAgent()
		ctx = hub.WithPrincipal(ctx, p)
		by, user = p.Actor(), p.User
	}
	key := sessionKey(hub.PrincipalFrom(ctx), session)
	if emit == nil {
		emit = func(Event) {}
	}
	var emitMu sync.Mutex
	send := func(e Event) {
		emitMu.Lock()
		defer emitMu.Unlock()
		emit(e)
	}
	s := a.sessions.get(key)
	s.mu.Lock() // one run at a time per session (on this node)
	defer s.mu.Unlock()
	a.loadShared(ctx, key, s)

	ctx, cancel := context.WithTimeout(ctx, a.cfg.Timeout)
	defer cancel()
	start := a.cfg.Now()
	model := a.cfg.Model
	if m, ok := a.provider.(interface{ Model() string }); ok { // a provider that follows settings (livesettings.LLM)
		model = m.Model()
	}
	rec := RunRecord{Session: session, By: by, User: user, Input: message, Provider: a.provider.Name(), Model: model, Started: start}
	msgs := append(s.history(), Message{Role: RoleUser, Text: message})

	var final strings.Builder
	for step := 1; ; step++ {
		if step > a.cfg.MaxSteps {
			rec.Outcome = OutcomeStepLimit
			rec.Error = "the agent stopped after " + itoa(a.cfg.MaxSteps) + " model calls without a final answer"
			send(Event{Type: EventError, Code: OutcomeStepLimit, Message: rec.Error})
			break
		}
		rec.Steps = step
		tools, direct := a.tools(ctx)
		req := Request{Model: model, System: a.systemPrompt(ctx, direct, speaker), MaxTokens: a.cfg.MaxTokens, Messages: msgs, Tools: tools}
		var onText func(string)
		if !a.cfg.NoStream {
			onText = func(t string) { send(Event{Type: EventText, Step: step, Text: t}) }
		}
		llmStart := time.Now()
		rctx, rcancel := context.WithTimeout(ctx, a.cfg.RequestTimeout)
		resp, err := a.provider.Chat(rctx, req, onText)
		rcancel()
		rec.LLMMs += ms(time.Since(llmStart))
		if err != nil {
			rec.Outcome, rec.Error = a.failure(ctx, err)
			send(Event{Type: EventError, Step: step, Code: rec.Outcome, Message: rec.Error})
			break
		}
		addUsage(&rec.Usage, resp.Usage)
		if a.cfg.NoStream && resp.Text != "" {
			send(Event{Type: EventText, Step: step, Text: resp.Text})
		}
		if resp.Text != "" {
			if final.Len() > 0 {
				final.WriteString("\n")
			}
			final.WriteString(resp.Text)
		}
		msgs = append(msgs, Message{Role: RoleAssistant, Text: resp.Text, ToolCalls: resp.ToolCalls})
		if len(resp.ToolCalls) == 0 {
			rec.Outcome = OutcomeOK
			break
		}
		results := a.runTools(ctx, step, resp.ToolCalls, send, &rec)
		msgs = append(msgs, Message{Role: RoleUser, Results: results})
		if ctx.Err() != nil {
			rec.Outcome, rec.Error = a.failure(ctx, ctx.Err())
			send(Event{Type: EventError, Step: step, Code: rec.Outcome, Message: rec.Error})
			break
		}
	}
	s.save(msgs)
	a.saveShared(key, s)
	rec.Text = final.String()
	rec.DurationMs = ms(a.cfg.Now().Sub(start))
	rec = a.runs.add(rec)
	if a.cfg.OnRun != nil {
		a.cfg.OnRun(rec)
	}
	usage := rec.Usage
	send(Event{Type: EventDone, Session: session, RunID: rec.ID, Steps: rec.Steps, Outcome: rec.Outcome,
		Text: rec.Text, DurationMs: rec.DurationMs, Usage: &usage})
	a.cfg.Logger.Info("agent run", "session", session, "outcome", rec.Outcome, "steps", rec.Steps,
		"tools", len(rec.Calls), "ms", rec.DurationMs, "llm_ms", rec.LLMMs)
	return rec, nil
}

// failure classifies an error that ended a run.
func (a *Agent) failure(ctx context.Context, err error) (outcome, msg string) {
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return OutcomeTimeout, "the run took longer than " + a.cfg.Timeout.String()
	case errors.Is(ctx.Err(), context.Canceled):
		return OutcomeCanceled, "the run was canceled"
	case errors.Is(err, context.DeadlineExceeded):
		return OutcomeTimeout, "the model did not answer within " + a.cfg.RequestTimeout.String()
	}
	return OutcomeError, err.Error()
}

// tools returns what the model is offered now, for the principal in ctx,
// and whether device tools are offered directly.
func (a *Agent) tools(ctx context.Context) ([]ToolDef, bool) {
	ts := a.cat.Tools(ctx)
	direct := true
	out := make([]ToolDef, 0, len(ts))
	for _, t := range ts {
		direct = direct && t.Name != catalog.ToolCallDeviceTool
		out = append(out, ToolDef{Name: t.Name, Description: t.Description, Schema: t.InputSchema})
	}
	return out, direct
}

// sessionKey is where the conversation session of p is kept: a person's
// sessions are their own, so that nobody reads another's conversation by
// naming its session; the admin's and a device's voice keep the id as
// given (the voice's is "device:<id>", which a person's never is).
func sessionKey(p *hub.Principal, session string) string {
	if p == nil || p.Admin || p.Device != "" {
		return session
	}
	return "user:" + p.User + "/" + session
}

func newSessionID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// sharedTimeout bounds each read and write of the shared history: a
// cluster that cannot answer costs a run this much, and it goes on with
// the local copy.
const sharedTimeout = 2 * time.Second

// loadShared replaces the session's local copy with the shared one, if
// there is one (another node may have gone on with the conversation).
func (a *Agent) loadShared(ctx context.Context, session string, s *session) {
	if a.cfg.Shared == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, sharedTimeout)
	defer cancel()
	data, err := a.cfg.Shared.LoadHistory(ctx, session)
	if err != nil {
		a.cfg.Logger.Warn("agent: could not read the shared conversation; going on with this node's copy", "session", session, "err", err)
		return
	}
	if data == nil {
		return
	}
	var msgs []Message
	if err := json.Unmarshal(data, &msgs); err != nil {
		a.cfg.Logger.Warn("agent: the shared conversation is not readable; going on with this node's copy", "session", session, "err", err)
		return
	}
	s.replace(msgs)
}

// saveShared stores the session's conversation for the other nodes.
func (a *Agent) saveShared(session string, s *session) {
	if a.cfg.Shared == nil {
		return
	}
	data, err := json.Marshal(s.history())
	if err == nil {
		// Not the run's context: a run that timed out still ends with its
		// conversation saved.
		ctx, cancel := context.WithTimeout(context.Background(), sharedTimeout)
		defer cancel()
		err = a.cfg.Shared.SaveHistory(ctx, session, data)
	}
	if err != nil {
		a.cfg.Logger.Warn("agent: could not share the conversation; other nodes will not see this run", "session", session, "err", err)
	}
}
