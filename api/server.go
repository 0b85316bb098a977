// Package api serves the hub's HTTP interface for people and programs:
//
//	GET    /api/devices                              devices (?online=true|false, ?room=)
//	GET    /api/devices/{id}                         one device
//	PATCH  /api/devices/{id}                         rename, set room and aliases
//	DELETE /api/devices/{id}                         forget a device
//	GET    /api/devices/{id}/tools                   cached MCP tools (?audience=agent)
//	POST   /api/devices/{id}/tools/{tool}/call       run a tool
//	GET    /api/devices/{id}/iot                     legacy IoT things and state
//	POST   /api/devices/{id}/iot/commands            send legacy IoT commands
//	GET    /api/devices/{id}/events                  recorded events of a device
//	GET    /api/calls                                call history (?device=, ?limit=)
//	GET    /api/events                               live events, Server-Sent Events (?device=)
//	GET    /healthz                                  liveness and readiness, no token
//	GET    /metrics                                  Prometheus metrics, no token
//
// Everything under /api needs the admin bearer token (RequireToken). Errors
// are JSON, {"error":{"code":…,"message":…}}, with the status WriteError
// maps the code to; unknown /api paths answer 404 and wrong methods 405 in
// the same shape.
package api

import (
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/metrics"
	"github.com/xiaozhi-hub/hub/registry"
)

// Options configures a Server.
type Options struct {
	Registry *registry.Registry // required
	// Token is the admin bearer token every /api request must present.
	// Required: New panics when it is empty.
	Token string
	// Metrics is served at /metrics; nil makes /metrics answer 404.
	Metrics *metrics.Metrics
	Logger  *slog.Logger // default: discard
	// Ready, if set, is asked by /healthz; an error makes it answer 503 with
	// the error's text (shown without a token, so keep secrets out of it).
	Ready func() error
	// MaxStreams caps the GET /api/events streams open at once (default
	// 64); more are refused with 429 and code "too_many_requests".
	MaxStreams int
	// StreamWriteTimeout drops an event stream whose client has not taken
	// one event (or keepalive) within it (default 15 s), so that a client
	// that stops reading holds no goroutine or buffer.
	StreamWriteTimeout time.Duration
}

// Server is the HTTP API over a Registry. Mount it with Register.
type Server struct {
	reg       *registry.Registry
	token     string
	metrics   *metrics.Metrics
	log       *slog.Logger
	ready     func() error
	keepalive time.Duration // SSE comment interval

	maxStreams   int64
	writeTimeout time.Duration
	streams      atomic.Int64 // event streams open
}

// New returns a Server. It panics when opts.Registry is nil or opts.Token is
// empty: an admin API without a token must not start (see RequireToken).
func New(opts Options) *Server {
	if opts.Registry == nil {
		panic("api: Options.Registry is required")
	}
	if opts.Token == "" {
		panic("api: Options.Token is required; refusing to serve an unprotected admin API")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.MaxStreams <= 0 {
		opts.MaxStreams = 64
	}
	if opts.StreamWriteTimeout <= 0 {
		opts.StreamWriteTimeout = 15 * time.Second
	}
	return &Server{
		reg:       opts.Registry,
		token:     opts.Token,
		metrics:   opts.Metrics,
		log:       opts.Logger,
		ready:     opts.Ready,
		keepalive: 15 * time.Second,

		maxStreams:   int64(opts.MaxStreams),
		writeTimeout: opts.StreamWriteTimeout,
	}
}

// route is one path with the handler of each method it allows.
type route struct {
	path    string
	methods []methodHandler
}

type methodHandler struct {
	method string
	h      http.HandlerFunc
}

func (s *Server) apiRoutes() []route {
	return []route{
		{"/api/devices", []methodHandler{{"GET", s.listDevices}}},
		{"/api/devices/{id}", []methodHandler{{"GET", s.getDevice}, {"PATCH", s.patchDevice}, {"DELETE", s.deleteDevice}}},
		{"/api/devices/{id}/tools", []methodHandler{{"GET", s.listTools}}},
		{"/api/devices/{id}/tools/{tool}/call", []methodHandler{{"POST", s.callTool}}},
		{"/api/devices/{id}/iot", []methodHandler{{"GET", s.listThings}}},
		{"/api/devices/{id}/iot/commands", []methodHandler{{"POST", s.sendCommands}}},
		{"/api/devices/{id}/events", []methodHandler{{"GET", s.deviceEvents}}},
		{"/api/calls", []methodHandler{{"GET", s.listCalls}}},
		{"/api/events", []methodHandler{{"GET", s.streamEvents}}},
	}
}

// Register mounts the API on mux: "/api/" (behind RequireToken), "/healthz"
// and "/metrics". Other handlers may share mux, but must not register
// patterns under /api/, which would bypass the token check.
func (s *Server) Register(mux *http.ServeMux) {
	api := http.NewServeMux()
	for _, rt := range s.apiRoutes() {
		handle(api, rt)
	}
	api.HandleFunc("/api/", s.noRoute)
	mux.Handle("/api/", RequireToken(s.token, api))

	handle(mux, route{"/healthz", []methodHandler{{"GET", s.healthz}}})
	handle(mux, route{"/metrics", []methodHandler{{"GET", s.metricsHandler()}}})
}

// handle registers each method of rt, and a method-less pattern for the same
// path that answers 405 in the error JSON format (ServeMux's own 405 is plain
// text). "GET" patterns also serve HEAD.
func handle(mux *http.ServeMux, rt route) {
	allowed := make([]string, 0, len(rt.methods)+1)
	for _, m := range rt.methods {
		mux.Handle(m.method+" "+rt.path, m.h)
		allowed = append(allowed, m.method)
		if m.method == http.MethodGet {
			allowed = append(allowed, http.MethodHead)
		}
	}
	allow := strings.Join(allowed, ", ")
	mux.HandleFunc(rt.path, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", allow)
		writeErrorStatus(w, http.StatusMethodNotAllowed, hub.EBADREQUEST,
			"method "+r.Method+" is not allowed on "+r.URL.Path+"; allowed: "+allow)
	})
}

func (s *Server) noRoute(w http.ResponseWriter, r *http.Request) {
	writeErrorStatus(w, http.StatusNotFound, hub.ENOTFOUND,
		"no such endpoint: "+r.Method+" "+r.URL.Path+" (the API serves /api/devices, /api/calls and /api/events)")
}

// fail writes err as an error response, logging internal errors with the
// request they happened in.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, errTooLarge) {
		writeErrorStatus(w, http.StatusRequestEntityTooLarge, hub.EBADREQUEST, hub.ErrorMessage(err))
		return
	}
	writeError(w, s.log.With("method", r.Method, "path", r.URL.Path), err)
}
