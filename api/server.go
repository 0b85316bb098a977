// Package api is the hub's one HTTP adapter for people and programs. It
// owns every /api route, the admin-token check (RequireToken), the table
// from error codes to HTTP statuses (WriteError) and the JSON and
// Server-Sent Events writers:
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
//	GET    /api/activations                          codes waiting for a person (Options.Trust)
//	POST   /api/activations/{code}/approve           approve one ({"name","room"} optional)
//	GET    /api/devices/{id}/trust                   what the hub decided and last heard
//	DELETE /api/devices/{id}/token                   revoke the device's tokens
//	POST   /api/devices/{id}/token/revoke            the same
//	POST   /api/devices/{id}/rebind                  bind to a new Client-Id ({"clientId"} optional)
//	GET    /api/oauth/requests                       MCP clients waiting for approval (Options.OAuth)
//	POST   /api/oauth/requests/{id}/approve          let it use /mcp
//	POST   /api/oauth/requests/{id}/deny             refuse it
//	GET    /api/oauth/clients                        registered MCP clients and their grants
//	DELETE /api/oauth/clients/{id}                   revoke a client with all its tokens
//	POST   /api/agent/chat                           ask the agent, Server-Sent Events (Options.Agent)
//	GET    /api/agent/runs                           recent agent runs (?limit=)
//	GET    /api/cluster                              the nodes alive and their devices (Options.Cluster)
//	POST   /api/login                                log in (no token; "cookie":true for the dashboard)
//	POST   /api/logout, GET /api/me                  end the login used; who the caller is
//	GET|POST /api/users, DELETE /api/users/{name}, PUT /api/users/{name}/password
//	GET|POST /api/tokens, DELETE /api/tokens/{id}    a user's logins and personal tokens
//	GET|POST /api/homes, GET|PATCH|DELETE /api/homes/{home}
//	POST   /api/homes/{home}/members, DELETE …/members/{user}
//	POST   /api/homes/{home}/devices, DELETE …/devices/{id}   bind by activation code; unbind
//	       /mcp                                      the MCP server (Options.MCP), behind the token
//	                                                 or an OAuth access token (Options.OAuth)
//	GET    /healthz                                  liveness and readiness, no token
//	GET    /metrics                                  Prometheus metrics, no token
//
// Everything under /api but POST /api/login needs a token: the admin
// token (hub.Admin), or a user's (Options.Accounts) as a bearer token or
// the dashboard's cookie (principal.go); /mcp the admin token or an OAuth
// access token. A user sees only the devices of their homes: every route
// that names a device answers one of another home exactly as an unknown
// one (seenDevice), lists leave it out, and roles limit what they change. Errors are JSON, {"error":{"code":…,"message":…}}, with
// the status WriteError maps the code to; unknown /api paths answer 404 and
// wrong methods 405 in the same shape.
//
// The Server holds one field per service it serves: the registry (devices,
// tools, calls, events), Trust (ota.Service) and Agent (agent.Agent), the
// last two as small interfaces declared here. A new /api route goes in the
// file of its service: its pattern in that file's routes method, its
// handler next to it.
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

	// Trust serves the activation, trust, revocation and re-binding
	// routes; nil leaves them out (404).
	Trust Trust
	// Agent serves /api/agent/chat and /api/agent/runs; nil leaves them out.
	Agent Agent
	// MCP is mounted at /mcp, behind the admin token; nil leaves it out.
	MCP http.Handler
	// OAuth, if set, serves the /api/oauth routes and admits its access
	// tokens at /mcp (beside the admin token).
	OAuth OAuth
	// Cluster, if set, tells GET /api/cluster about this node's cluster;
	// nil: a hub alone.
	Cluster func() ClusterInfo
	// Accounts, if set, admits users' tokens beside the admin token, each
	// request acting as its user (hub.Principal).
	Accounts Accounts
	// Services serves /api/services (outside MCP tools); nil: 503.
	Services Services
	// Settings serves /api/settings (live settings, admin); nil: 503.
	Settings Settings
	// Personas serves the persona and memory routes; nil: 503.
	Personas Personas
}

// Server is the HTTP API over a Registry. Mount it with Register.
type Server struct {
	reg       *registry.Registry
	trust     Trust
	agent     Agent
	mcp       http.Handler
	oauth     OAuth
	cluster   func() ClusterInfo
	accounts  Accounts
	services  Services
	settings  Settings
	personas  Personas
	binds     *bindLimit
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
		trust:     opts.Trust,
		agent:     opts.Agent,
		mcp:       opts.MCP,
		oauth:     opts.OAuth,
		cluster:   opts.Cluster,
		accounts:  opts.Accounts,
		services:  opts.Services,
		settings:  opts.Settings,
		personas:  opts.Personas,
		binds:     newBindLimit(),
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

// apiRoutes is every /api route: each service's file lists its own.
func (s *Server) apiRoutes() []route {
	var all []route
	for _, rs := range [][]route{s.deviceRoutes(), s.callRoutes(), s.eventRoutes(), s.trustRoutes(), s.agentRoutes(), s.oauthRoutes(), s.clusterRoutes(),
		s.serviceRoutes(), s.peopleRoutes(), s.homeRoutes(), s.settingsRoutes(), s.personaRoutes()} {
		all = append(all, rs...)
	}
	return append(all, route{"/api/openapi.json", []methodHandler{{"GET", s.serveOpenAPI}}})
}

// Register mounts the API on mux: "/api/" and "/mcp" (behind
// RequireToken), "/healthz" and "/metrics". Other handlers may share mux,
// but must not register patterns under /api/, which would bypass the token
// check.
func (s *Server) Register(mux *http.ServeMux) {
	api := http.NewServeMux()
	for _, rt := range s.apiRoutes() {
		handle(api, rt)
	}
	api.HandleFunc("/api/", s.noRoute)
	mux.Handle("/api/", s.requirePrincipal(api))
	for _, rt := range s.publicRoutes() {
		handle(mux, rt)
	}
	if s.mcp != nil {
		mux.Handle("/mcp", s.requireMCPToken(s.mcp))
	}

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
		"no such endpoint: "+r.Method+" "+r.URL.Path+" (the API serves /api/devices, /api/calls, /api/events, /api/activations and /api/agent; GET /api/openapi.json describes every route)")
}

// unlessMissing is h, or, when missing (a part of Options left nil), a
// handler that answers 503 saying the hub has no what.
func (s *Server) unlessMissing(missing bool, what string, h http.HandlerFunc) http.HandlerFunc {
	if !missing {
		return h
	}
	return func(w http.ResponseWriter, r *http.Request) {
		s.fail(w, r, hub.Errorf(hub.EUNAVAILABLE, "%s are not set up on this hub", what))
	}
}

// answer writes v as JSON with 200, or err.
func (s *Server) answer(w http.ResponseWriter, r *http.Request, v any, err error) {
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// fail writes err as an error response, logging internal errors with the
// request they happened in. The registry's "unknown" errors get the route
// that lists the known ones.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, errTooLarge):
		writeErrorStatus(w, http.StatusRequestEntityTooLarge, hub.EBADREQUEST, hub.ErrorMessage(err))
		return
	case errors.Is(err, registry.ErrUnknownDevice):
		err = hint(err, "GET /api/devices lists the known ones")
	case errors.Is(err, registry.ErrUnknownTool):
		err = hint(err, "GET /api/devices/"+pathID(r)+"/tools lists its tools")
	}
	writeError(w, s.log.With("method", r.Method, "path", r.URL.Path), err)
}
