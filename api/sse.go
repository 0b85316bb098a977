package api

import (
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// sseStream writes Server-Sent Events to one client. Every write has a
// deadline of its own (Options.StreamWriteTimeout), so that a client that
// stops reading is dropped instead of holding its goroutine forever, and
// is flushed at once. Both event streams of the API use it: GET
// /api/events and POST /api/agent/chat.
type sseStream struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	log     *slog.Logger
	buf     []byte
}

// setSSEHeaders sets the headers of an event stream.
func setSSEHeaders(h http.Header) {
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
}

// startSSE answers 200 with the event-stream headers and returns the
// stream to write the events to.
func (s *Server) startSSE(w http.ResponseWriter) *sseStream {
	st := &sseStream{w: w, rc: http.NewResponseController(w), timeout: s.writeTimeout, log: s.log, buf: make([]byte, 0, 1024)}
	setSSEHeaders(w.Header())
	st.deadline()
	w.WriteHeader(http.StatusOK)
	return st
}

func (st *sseStream) deadline() {
	if err := st.rc.SetWriteDeadline(time.Now().Add(st.timeout)); err != nil && !errors.Is(err, http.ErrNotSupported) {
		st.log.Debug("api: cannot set write deadline for event stream", "err", err)
	}
}

// event writes one message, "event: <typ>\nid: <id>\ndata: <data>\n\n"
// (no id line when id is 0), and flushes it. data must be one line, as
// json.Marshal writes it; a type that is empty or not one line is sent as
// "message".
func (st *sseStream) event(typ string, id int64, data []byte) error {
	if typ == "" || strings.ContainsAny(typ, "\r\n") {
		typ = "message"
	}
	b := append(st.buf[:0], "event: "...)
	b = append(b, typ...)
	if id != 0 {
		b = append(b, "\nid: "...)
		b = strconv.AppendInt(b, id, 10)
	}
	b = append(b, "\ndata: "...)
	b = append(b, data...)
	b = append(b, "\n\n"...)
	st.buf = b
	return st.write(b)
}

// comment writes ": <text>\n\n", which clients ignore (a keepalive).
func (st *sseStream) comment(text string) error {
	b := append(st.buf[:0], ": "...)
	b = append(b, text...)
	b = append(b, "\n\n"...)
	st.buf = b
	return st.write(b)
}

func (st *sseStream) write(b []byte) error {
	st.deadline()
	if _, err := st.w.Write(b); err != nil {
		return err
	}
	err := st.rc.Flush()
	if errors.Is(err, http.ErrNotSupported) {
		st.log.Error("api: event stream cannot flush; is a middleware buffering responses?", "err", err)
	}
	return err
}
