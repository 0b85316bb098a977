package api

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/xiaozhi-hub/hub"
)

// Agent is the hub's built-in LLM agent (agent.Agent; its events and
// records are the hub's vocabulary, so this package does not import it).
type Agent interface {
	// Ready is nil when a model is configured, else an EUNAVAILABLE error
	// saying what to set.
	Ready() error
	// Run answers one message in a session, calling emit for each event
	// as it happens, acting for the principal ctx carries (its devices
	// only, its rights, its own sessions). It fails only before the run
	// starts.
	Run(ctx context.Context, session, message string, emit func(hub.AgentEvent)) (hub.AgentRun, error)
	// Runs returns up to limit recent runs p may see (the admin: all; a
	// person: their own), newest first.
	Runs(p *hub.Principal, limit int) []hub.AgentRun
}

func (s *Server) agentRoutes() []route {
	if s.agent == nil {
		return nil
	}
	return []route{
		{hub.AgentChatPath, []methodHandler{{"POST", s.chat}}},
		{"/api/agent/runs", []methodHandler{{"GET", s.listRuns}}},
	}
}

var chatSpec = bodySpec{
	kinds: fieldKinds{"message": "a string", "session": "a string", "stream": "a boolean"},
	shape: `{"message":"打开客厅的灯","session":"…"}`,
	limit: 64 << 10,
}

// chat serves POST /api/agent/chat, body hub.AgentChatRequest. The answer is
// a stream of Server-Sent Events, one per hub.AgentEvent: "event: tool_call|
// tool_result|text|done|error" and "data: <Event as JSON>"; the stream
// ends after done. With "stream":false it is the run's record, as one JSON
// object. Without a configured model it answers 503 saying what to set.
// The agent runs as the person who asks: it sees and calls only their
// devices.
func (s *Server) chat(w http.ResponseWriter, r *http.Request) {
	ctx := hub.WithPrincipal(r.Context(), principal(r))
	if err := s.agent.Ready(); err != nil {
		s.fail(w, r, err)
		return
	}
	var req hub.AgentChatRequest
	if err := decodeBody(w, r, &req, chatSpec, false); err != nil {
		s.fail(w, r, err)
		return
	}
	if req.Stream != nil && !*req.Stream {
		rec, err := s.agent.Run(ctx, req.Session, req.Message, nil)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, rec)
		return
	}
	// A client that stops reading ends the run.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var st *sseStream
	emit := func(e hub.AgentEvent) {
		if st == nil {
			st = s.startSSE(w) // on the first event: errors before it are JSON
		}
		data, err := json.Marshal(e)
		if err == nil {
			err = st.event(e.Type, 0, data)
		}
		if err != nil {
			s.log.Info("api: agent stream ended: write failed (client gone, or not reading)", "remote", r.RemoteAddr, "err", err)
			cancel()
		}
	}
	if _, err := s.agent.Run(ctx, req.Session, req.Message, emit); err != nil && st == nil {
		s.fail(w, r, err)
	}
}

// listRuns answers GET /api/agent/runs?limit=N (default 50):
// {"runs":[…]}, newest first: a person's own runs, or, for the admin, all.
func (s *Server) listRuns(w http.ResponseWriter, r *http.Request) {
	limit, err := parseLimit(r.URL.Query().Get("limit"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if limit == 0 {
		limit = 50
	}
	writeJSON(w, http.StatusOK, map[string]any{"runs": s.agent.Runs(principal(r), limit)})
}
