package mcpserver

import (
	"net/http"
	"time"
)

// deadlineWriter gives each write and flush of a response a deadline of
// its own, so that a client that stops reading an MCP stream is dropped
// instead of holding its session's goroutine; a stream that keeps being
// read lives as long as it likes (the http.Server has no WriteTimeout).
type deadlineWriter struct {
	http.ResponseWriter
	rc *http.ResponseController
	d  time.Duration
}

func (w deadlineWriter) Write(p []byte) (int, error) {
	_ = w.rc.SetWriteDeadline(time.Now().Add(w.d))
	return w.ResponseWriter.Write(p)
}

func (w deadlineWriter) Flush() {
	_ = w.rc.SetWriteDeadline(time.Now().Add(w.d))
	_ = w.rc.Flush()
}

func (w deadlineWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// withWriteDeadlines serves r with per-write deadlines (net/http clears
// the deadline when the request ends).
func withWriteDeadlines(h http.Handler, d time.Duration, w http.ResponseWriter, r *http.Request) {
	rc := http.NewResponseController(w)
	h.ServeHTTP(deadlineWriter{ResponseWriter: w, rc: rc, d: d}, r)
}
