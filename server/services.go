package server

import (
	"context"
	"net/http"

	"github.com/xiaozhi-hub/hub/services"
)

// openToolServices opens the services, the outside MCP servers whose tools
// the hub offers beside the devices' (package services): the endpoints
// programs connect to, and the configured mcp-servers, which it starts
// connecting to. Their calls go into the registry's call history. In a
// cluster the endpoint services are shared (cluster/services.go): the
// node, started before, applies the shared ones once the Manager is open.
func (h *Hub) openToolServices(ctx context.Context) error {
	cfg, c := h.cfg, h.cluster
	var st services.Store = h.store
	var elsewhere services.Elsewhere
	if c != nil {
		st = c.Node.ServicesStore(h.store) // endpoint services are the cluster's (docs/services.md)
		elsewhere = c.Node.ServiceCalls()  // and callable on every node
	}
	h.services = services.New(services.Options{
		Elsewhere: elsewhere,
		Store:     st, Logger: h.log.With("component", "services"), Record: h.Registry.RecordCall,
		Servers: cfg.MCPServers, PublicURL: cfg.PublicURL, CallTimeout: cfg.CallTimeout, MaxCallTimeout: cfg.MaxCallTimeout,
		Version: Version, HomeExists: h.accounts.Exists,
	})
	h.closers.pushf(h.services.Close) // before the registry closes: calls are recorded through it
	svc := h.services
	h.Metrics.Gauge("xiaozhi_hub_services_known", "Services (outside MCP servers: endpoints and mcp-servers) the hub knows, online or not.",
		func() float64 { n, _ := svc.Counts(); return float64(n) })
	h.Metrics.Gauge("xiaozhi_hub_services_online", "Services whose program or server is connected now.",
		func() float64 { _, n := svc.Counts(); return float64(n) })
	if err := h.services.Load(ctx); err != nil {
		return err
	}
	if c != nil {
		c.Node.ServeServiceCalls(h.services)
		return c.Node.ServeServices(ctx, h.services)
	}
	return nil
}

// mountServices mounts the services' WebSocket endpoint (its own token,
// in the URL, not the API's).
func (h *Hub) mountServices(mux *http.ServeMux) {
	mux.Handle("GET "+services.EndpointPath, h.services)
}
