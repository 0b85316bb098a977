package agent

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/xiaozhi-hub/hub"
)

// ChatRequest is the body of POST /api/agent/chat.
type ChatRequest struct {
	Message string `json:"message"`
	// Session continues a conversation; empty starts one (its id is in the
	// done event).
	Session string `json:"session,omitempty"`
	// Stream false answers with one JSON object (the run record) instead of
	// Server-Sent Events.
	Stream *bool `json:"stream,omitempty"`
}

// Handler serves POST /api/agent/chat. The answer is a stream of
// Server-Sent Events, one per Event: "event: tool_call|tool_result|text|
// done|error" and "data: <Event as JSON>"; the stream ends after done.
// Without a configured model it answers 503 with a message saying what to
// set. Mount it behind the hub's bearer token.
func Handler(a *Agent) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			writeError(w, http.StatusMethodNotAllowed, hub.EBADREQUEST, "use POST with {\"message\":\"…\"}")
			return
		}
		if err := a.Ready(); err != nil {
			writeError(w, http.StatusServiceUnavailable, "agent_not_configured", hub.ErrorMessage(err))
			return
		}
		var req ChatRequest
		dec := json.NewDecoder(io.LimitReader(r.Body, 64<<10))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&req); err != nil {
			writeError(w, http.StatusBadRequest, hub.EBADREQUEST, "the body must be JSON {\"message\":\"…\",\"session\":\"…\"}: "+err.Error())
			return
		}
		if req.Stream != nil && !*req.Stream {
			rec, err := a.Run(r.Context(), req.Session, req.Message, nil)
			if err != nil {
				writeError(w, http.StatusUnprocessableEntity, hub.ErrorCode(err), hub.ErrorMessage(err))
				return
			}
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(rec)
			return
		}
		flusher, _ := w.(http.Flusher)
		started := false
		emit := func(e Event) {
			if !started {
				h := w.Header()
				h.Set("Content-Type", "text/event-stream")
				h.Set("Cache-Control", "no-cache")
				h.Set("X-Accel-Buffering", "no")
				w.WriteHeader(http.StatusOK)
				started = true
			}
			b, _ := json.Marshal(e)
			fmt.Fprintf(w, "event: %s\ndata: %s\n\n", e.Type, b)
			if flusher != nil {
				flusher.Flush()
			}
		}
		if _, err := a.Run(r.Context(), req.Session, req.Message, emit); err != nil && !started {
			status := http.StatusUnprocessableEntity
			if hub.ErrorCode(err) != hub.EINVALID {
				status = http.StatusInternalServerError
			}
			writeError(w, status, hub.ErrorCode(err), hub.ErrorMessage(err))
		}
	})
}

// RunsHandler serves GET /api/agent/runs?limit=N: the newest runs first,
// as {"runs":[RunRecord…]}.
func RunsHandler(a *Agent) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			w.Header().Set("Allow", http.MethodGet)
			writeError(w, http.StatusMethodNotAllowed, hub.EBADREQUEST, "use GET")
			return
		}
		limit := 50
		if s := r.URL.Query().Get("limit"); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n < 1 {
				writeError(w, http.StatusBadRequest, hub.EBADREQUEST, "limit must be a positive whole number")
				return
			}
			limit = n
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"runs": a.Runs(limit)})
	})
}

// writeError writes the hub's error body {"error":{"code":…,"message":…}}.
func writeError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"code": code, "message": msg}})
}
