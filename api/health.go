package api

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/xiaozhi-hub/hub"
)

type health struct {
	Status        string `json:"status"` // "ok" or "unavailable"
	DevicesOnline int    `json:"devicesOnline"`
	Error         string `json:"error,omitempty"`
}

// healthz answers 200 {"status":"ok","devicesOnline":N}, or 503 with the
// error when Options.Ready reports one.
func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	h := health{Status: "ok", DevicesOnline: s.reg.OnlineCount()}
	if s.ready != nil {
		if err := s.ready(); err != nil {
			s.log.Warn("api: not ready", "err", err)
			h.Status, h.Error = "unavailable", err.Error()
			writeJSON(w, http.StatusServiceUnavailable, h)
			return
		}
	}
	writeJSON(w, http.StatusOK, h)
}

// metricsHandler serves the hub's Prometheus registry, or 404 without one.
// promhttp's own handler metrics are not registered, so that several
// Servers may share one Metrics.
func (s *Server) metricsHandler() http.HandlerFunc {
	if s.metrics == nil || s.metrics.Registry == nil {
		return func(w http.ResponseWriter, r *http.Request) {
			writeErrorStatus(w, http.StatusNotFound, hub.ENOTFOUND, "metrics are not enabled on this hub")
		}
	}
	h := promhttp.HandlerFor(s.metrics.Registry, promhttp.HandlerOpts{
		ErrorLog:      promLogger{s},
		ErrorHandling: promhttp.ContinueOnError,
		// A gzip writer is about 1 MB of heap, kept in a pool the
		// collector empties under load: compressing a page of a few
		// kilobytes would cost each scrape of a busy hub more memory than
		// a hundred talking devices hold.
		DisableCompression: true,
	})
	return h.ServeHTTP
}

// promLogger adapts the Server's logger to promhttp.Logger.
type promLogger struct{ s *Server }

func (l promLogger) Println(v ...any) { l.s.log.Error("api: metrics", "err", v) }
