package cluster

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/xiaozhi-hub/hub"
)

// The services' endpoint records (name, home, token hash, last tools) are
// the cluster's too: sv.<name> in the state bucket, applied on every node
// (docs/services.md, "In a cluster"). A service made on one node takes its
// program's connection on any node; the others list it, with the tools
// the connected node stored, offline. Configured servers (mcp-servers)
// stay each node's own.

// ServicesStore is the services' store (services.Store).
type ServicesStore interface {
	LoadServices(ctx context.Context) ([]hub.Service, error)
	SaveService(ctx context.Context, s hub.Service) error
	SaveServiceTools(ctx context.Context, name string, tools []hub.Tool) error
	DeleteService(ctx context.Context, name string) error
}

// ServicesManager is the services' Manager as the cluster keeps it up to
// date (services.Manager.ApplyService); nil means deleted. It reports
// whether it took the change (not over a configured server of this node).
type ServicesManager interface {
	ApplyService(name string, s *hub.Service) bool
}

func serviceKey(name string) string { return "sv." + key(name) }

// ServicesStore wraps the services' own store: an endpoint service's
// changes go to the shared state first.
func (n *Node) ServicesStore(local ServicesStore) ServicesStore {
	n.mu.Lock()
	n.servicesLocal = local
	n.mu.Unlock()
	return &sharedServices{ServicesStore: local, n: n}
}

type sharedServices struct {
	ServicesStore
	n *Node
}

func (s *sharedServices) SaveService(ctx context.Context, sv hub.Service) error {
	if sv.Kind == hub.ServiceEndpoint {
		if err := s.n.putJSON(ctx, serviceKey(sv.Name), sv); err != nil {
			return unshared("the service "+sv.Name, err)
		}
	}
	return s.ServicesStore.SaveService(ctx, sv)
}

// SaveServiceTools shares a shared service's new tools (the whole record:
// one key a service).
func (s *sharedServices) SaveServiceTools(ctx context.Context, name string, tools []hub.Tool) error {
	if sv, ok := s.n.sharedService(name); ok {
		sv.Tools = tools
		if err := s.n.putJSON(ctx, serviceKey(name), sv); err != nil {
			return unshared("the tools of the service "+name, err)
		}
	}
	return s.ServicesStore.SaveServiceTools(ctx, name, tools)
}

func (s *sharedServices) DeleteService(ctx context.Context, name string) error {
	if _, ok := s.n.sharedService(name); ok {
		if err := s.n.remove(ctx, serviceKey(name)); err != nil {
			return unshared("the removal of the service "+name, err)
		}
	}
	return s.ServicesStore.DeleteService(ctx, name)
}

// sharedService is the shared record of service name, as this node has it.
func (n *Node) sharedService(name string) (hub.Service, bool) {
	n.mu.Lock()
	v, ok := n.seen[serviceKey(name)]
	n.mu.Unlock()
	var sv hub.Service
	if !ok || v.deleted || json.Unmarshal(v.val, &sv) != nil || sv.Name != name {
		return hub.Service{}, false
	}
	return sv, true
}

// ServeServices keeps m up to date with the shared services from now on:
// it applies those the shared state holds, then shares the endpoint
// services only this node knew (what the shared state deleted stays
// deleted). The services open after the node started, so this is called
// then.
func (n *Node) ServeServices(ctx context.Context, m ServicesManager) error {
	n.mu.Lock()
	n.services = m
	local := n.servicesLocal
	var names []string
	for k, v := range n.seen {
		if strings.HasPrefix(k, "sv.") && !v.deleted {
			if _, id, _, ok := parseKey(k); ok {
				names = append(names, id)
			}
		}
	}
	n.mu.Unlock()
	for _, name := range names {
		if err := n.applyService(ctx, name); err != nil {
			n.log.Warn("could not apply a shared service", "service", name, "err", err)
		}
	}
	if local == nil {
		return nil
	}
	mine, err := local.LoadServices(ctx)
	if err != nil {
		return err
	}
	for _, sv := range mine {
		n.mu.Lock()
		_, known := n.seen[serviceKey(sv.Name)]
		n.mu.Unlock()
		if sv.Kind != hub.ServiceEndpoint || known {
			continue
		}
		if err := n.putJSON(ctx, serviceKey(sv.Name), sv); err != nil {
			return unshared("the service "+sv.Name, err)
		}
	}
	return nil
}

// applyService brings service name to its newest shared value (read at
// the time of applying, so that a late or repeated application never
// takes back a newer one): this node's own store, then the Manager.
func (n *Node) applyService(ctx context.Context, name string) error {
	n.mu.Lock()
	m, local := n.services, n.servicesLocal
	v, ok := n.seen[serviceKey(name)]
	n.mu.Unlock()
	if m == nil || local == nil || !ok {
		return nil
	}
	if v.deleted {
		if !m.ApplyService(name, nil) {
			return nil
		}
		if err := local.DeleteService(ctx, name); err != nil && hub.ErrorCode(err) != hub.ENOTFOUND {
			return err
		}
		return nil
	}
	var sv hub.Service
	if err := json.Unmarshal(v.val, &sv); err != nil || sv.Name != name || sv.Kind != hub.ServiceEndpoint {
		return hub.Errorf(hub.EINVALID, "malformed shared service %q", name)
	}
	if !m.ApplyService(name, &sv) {
		return nil
	}
	return local.SaveService(ctx, sv)
}
