package server

import (
	"context"
	"net/http"

	"github.com/xiaozhi-hub/hub/services"
)

// openToolServices opens the services, the outside MCP servers whose tools
// the hub offers beside the devices' (package services): the endpoints
// programs connect to, and the configured mcp-servers, which it starts
// connecting to. Their calls go into the registry's call history.
func (h *Hub) openToolServices(ctx context.Context) error {
	cfg := h.cfg
	h.services = services.New(services.Options{
		Store: h.store, Logger: h.log.With("component", "services"), Record: h.Registry.RecordCall,
		Servers: cfg.MCPServers, PublicURL: cfg.PublicURL, CallTimeout: cfg.CallTimeout, MaxCallTimeout: cfg.MaxCallTimeout,
		Version: Version, HomeExists: h.accounts.Exists,
	})
	h.closers.pushf(h.services.Close) // before the registry closes: calls are recorded through it
	svc := h.services
	h.Metrics.Gauge("xiaozhi_hub_services_known", "Services (outside MCP servers: endpoints and mcp-servers) the hub knows, online or not.",
		func() float64 { n, _ := svc.Counts(); return float64(n) })
	h.Metrics.Gauge("xiaozhi_hub_services_online", "Services whose program or server is connected now.",
		func() float64 { _, n := svc.Counts(); return float64(n) })
	return h.services.Load(ctx)
}

// mountServices mounts the services' WebSocket endpoint (its own token,
// in the URL, not the API's).
func (h *Hub) mountServices(mux *http.ServeMux) {
	mux.Handle("GET "+services.EndpointPath, h.services)
}
