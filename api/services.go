package api

import (
	"context"
	"errors"
	"net/http"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/registry"
)

// Services are the outside MCP servers whose tools the hub offers beside
// the devices' (services.Manager): endpoints programs connect to, and the
// configured mcp-servers.
type Services interface {
	// CreateService makes an endpoint service; the view's URL holds its
	// token, shown this once. base is the hub's URL as the caller reached it.
	CreateService(ctx context.Context, name, home, base string) (hub.ServiceView, error)
	// Services lists the services p sees.
	Services(p *hub.Principal) []hub.ServiceView
	// Service is one of them (ENOTFOUND for one p does not see).
	Service(p *hub.Principal, name string) (hub.ServiceView, error)
	// DeleteService revokes an endpoint service and closes its connection.
	DeleteService(ctx context.Context, name string) error
	// CallService runs a service's tool for the principal in ctx.
	CallService(ctx context.Context, c hub.ServiceCall) (hub.CallResult, error)
}

// serviceRoutes are always listed: without Options.Services they answer
// 503 saying so.
func (s *Server) serviceRoutes() []route {
	return []route{
		{"/api/services", []methodHandler{{"GET", s.needServices(s.listServices)}, {"POST", s.needServices(s.createService)}}},
		{"/api/services/{name}", []methodHandler{{"GET", s.needServices(s.getService)}, {"DELETE", s.needServices(s.deleteService)}}},
		{"/api/services/{name}/tools/{tool}/call", []methodHandler{{"POST", s.needServices(s.callService)}}},
	}
}

func init() {
	for k, o := range map[string]op{
		"GET /api/services": {summary: "Services (MCP endpoints programs connect to, and the configured mcp-servers) with their online state and tools (cached while offline)",
			answer: `{"services":[{"name":"calc","kind":"endpoint|configured","home":"","online":true,"tools":[{"name","description","inputSchema"}…],"server":"…"}…]}`},
		"POST /api/services": {summary: "Create an endpoint service (the admin, for a home or everyone; a home's owner, for that home): its URL, with the token, is shown this once",
			body: `{"name":"calc","home":"<id>"}`, status: "201", answer: `{"name":"calc","kind":"endpoint","online":false,"tools":[],"url":"ws://<host:port>/services/ws?token=xzs_…"}`},
		"GET /api/services/{name}":    {summary: "One service", answer: "Service"},
		"DELETE /api/services/{name}": {summary: "Revoke an endpoint service (the admin; a home's owner, that home's): its token stops working and its connection closes at once", status: "204", answer: "nothing"},
		"POST /api/services/{name}/tools/{tool}/call": {summary: "Call a service's tool; arguments are checked against its inputSchema first; an offline service is 409 at once",
			body: `{"arguments":{"python_expression":"1+2"},"timeoutMs":30000}`, answer: `{"content":[…],"isError":bool}`},
		"GET /services/ws": {summary: "The services' MCP endpoint (WebSocket, ?token=; the hub is the MCP client; 401 without a token, 403 for a wrong or revoked one)", status: "101", answer: "JSON-RPC, one message per text frame"},
	} {
		operations[k] = o
	}
}

// needServices answers 503 while the hub has no services (Options.Services).
func (s *Server) needServices(h http.HandlerFunc) http.HandlerFunc {
	return s.unlessMissing(s.services == nil, "services", h)
}

func (s *Server) listServices(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, struct {
		Services []hub.ServiceView `json:"services"`
	}{s.services.Services(principal(r))})
}

func (s *Server) getService(w http.ResponseWriter, r *http.Request) {
	v, err := s.services.Service(principal(r), r.PathValue("name"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

var serviceSpec = bodySpec{
	kinds: fieldKinds{"name": "a string", "home": "a string (a home's id)"},
	shape: `{"name":"calc","home":"<id>"}`,
	limit: 4 << 10,
}

func (s *Server) createService(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Name string `json:"name"`
		Home string `json:"home"`
	}
	if err := decodeBody(w, r, &body, serviceSpec, false); err != nil {
		s.fail(w, r, err)
		return
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	v, err := s.services.CreateService(r.Context(), body.Name, body.Home, scheme+"://"+r.Host)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, v)
}

func (s *Server) deleteService(w http.ResponseWriter, r *http.Request) {
	if err := s.services.DeleteService(r.Context(), r.PathValue("name")); err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// callService runs a service's tool: the body and answer of a device tool
// call (callTool).
func (s *Server) callService(w http.ResponseWriter, r *http.Request) {
	body, timeout, err := readCall(w, r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	res, err := s.services.CallService(r.Context(), hub.ServiceCall{
		Service: r.PathValue("name"), Tool: r.PathValue("tool"), Arguments: body.Arguments, Timeout: timeout, Caller: "api",
	})
	if errors.Is(err, registry.ErrTimeoutRange) {
		err = hub.Errorf(hub.EINVALID, "timeoutMs must be positive and within the hub's max-call-timeout, not %d", *body.TimeoutMs)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeCallResult(w, res)
}
