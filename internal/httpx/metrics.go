package httpx

import (
	"net/http"
	"time"
)

// Recorder records a finished request (metrics.Metrics).
type Recorder interface {
	Request(route string, code int, seconds float64, timed bool)
}

// CountRequests records every request by its route pattern (never the
// path: device ids would make the label unbounded) and status. The
// pattern is the innermost mux's, which sets it on the request (the API's
// routes sit on a mux of their own). WebSocket upgrades are counted when
// they end; long streams (SSE, /mcp GET) are counted but not timed.
func CountRequests(m Recorder, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		route := func() string {
			if r.Pattern == "" {
				return "unmatched"
			}
			return r.Pattern
		}
		if r.Header.Get("Upgrade") != "" { // hijacked: the status is not ours to see
			next.ServeHTTP(w, r)
			m.Request(route(), http.StatusSwitchingProtocols, 0, false)
			return
		}
		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r)
		if sw.code == 0 {
			sw.code = http.StatusOK
		}
		m.Request(route(), sw.code, time.Since(start).Seconds(), !sw.flushed)
	})
}

// statusWriter remembers the status code; Unwrap lets http.ResponseController
// reach the connection (write deadlines of streams).
type statusWriter struct {
	http.ResponseWriter
	code    int
	flushed bool
}

func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Flush() {
	w.flushed = true
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
