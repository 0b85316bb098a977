package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/xiaozhi-hub/hub"
)

// The MCP clients registered through the hub's OAuth server, and the
// grants a person approved for them (token hashes), are the cluster's
// too: kept in the state bucket (oc.<client>, og.<grant>) and applied on
// every node, so a token issued by one node opens /mcp on any, a refresh
// works anywhere, and a revocation holds everywhere. An authorization in
// progress (waiting for a person, its one-minute code) stays on the node
// it began on.

// OAuthStore is the OAuth service's store (oauth.Store).
type OAuthStore interface {
	LoadOAuth(ctx context.Context) ([]hub.OAuthClient, []hub.OAuthGrant, error)
	SaveOAuthClient(ctx context.Context, c hub.OAuthClient) error
	DeleteOAuthClient(ctx context.Context, clientID string) error
	SaveOAuthGrant(ctx context.Context, g hub.OAuthGrant) error
	DeleteOAuthGrant(ctx context.Context, grantID string) error
}

// OAuthService is the OAuth service as the cluster keeps it up to date
// (oauth.Service).
type OAuthService interface {
	ApplyClient(id string, c *hub.OAuthClient)
	ApplyGrant(id string, g *hub.OAuthGrant)
}

func oauthClientKey(id string) string { return "oc." + key(id) }
func oauthGrantKey(id string) string  { return "og." + key(id) }

// OAuthStore wraps the OAuth service's own store: clients and grants go
// to the shared state first.
func (n *Node) OAuthStore(local OAuthStore) OAuthStore {
	n.oauthLocal = local
	return &sharedOAuth{OAuthStore: local, n: n}
}

// ServeOAuth keeps svc up to date with the other nodes' clients and
// grants. Call it before Start.
func (n *Node) ServeOAuth(svc OAuthService) { n.oauth = svc }

type sharedOAuth struct {
	OAuthStore
	n *Node
}

func (s *sharedOAuth) SaveOAuthClient(ctx context.Context, c hub.OAuthClient) error {
	if err := s.n.putJSON(ctx, oauthClientKey(c.ID), c); err != nil {
		return hub.Errorf(hub.EUNAVAILABLE, "the cluster's shared state did not take the OAuth client: %v", err)
	}
	return s.OAuthStore.SaveOAuthClient(ctx, c)
}

func (s *sharedOAuth) SaveOAuthGrant(ctx context.Context, g hub.OAuthGrant) error {
	if err := s.n.putJSON(ctx, oauthGrantKey(g.ID), g); err != nil {
		return hub.Errorf(hub.EUNAVAILABLE, "the cluster's shared state did not take the OAuth grant: %v", err)
	}
	return s.OAuthStore.SaveOAuthGrant(ctx, g)
}

func (s *sharedOAuth) DeleteOAuthGrant(ctx context.Context, id string) error {
	if err := s.n.remove(ctx, oauthGrantKey(id)); err != nil {
		return hub.Errorf(hub.EUNAVAILABLE, "the cluster's shared state did not take the removal of an OAuth grant: %v", err)
	}
	return s.OAuthStore.DeleteOAuthGrant(ctx, id)
}

// DeleteOAuthClient removes the client and every grant of it (the local
// store cascades; the bucket must be told each).
func (s *sharedOAuth) DeleteOAuthClient(ctx context.Context, id string) error {
	keys := []string{oauthClientKey(id)}
	s.n.mu.Lock()
	for k, v := range s.n.seen {
		if strings.HasPrefix(k, "og.") && !v.deleted {
			var g hub.OAuthGrant
			if json.Unmarshal(v.val, &g) == nil && g.ClientID == id {
				keys = append(keys, k)
			}
		}
	}
	s.n.mu.Unlock()
	for _, k := range keys {
		if err := s.n.remove(ctx, k); err != nil {
			return hub.Errorf(hub.EUNAVAILABLE, "the cluster's shared state did not take the removal of an OAuth client: %v", err)
		}
	}
	return s.OAuthStore.DeleteOAuthClient(ctx, id)
}

func (n *Node) putJSON(ctx context.Context, k string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return n.put(ctx, k, b)
}

// remove deletes a key this node decided to delete (a deletion that came
// from the bucket is not written again).
func (n *Node) remove(ctx context.Context, k string) error {
	n.mu.Lock()
	cur, ok := n.seen[k]
	n.mu.Unlock()
	if ok && cur.deleted {
		return nil
	}
	err := n.transient(ctx, func() error { return n.state.Delete(ctx, k) })
	if err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		return err
	}
	n.note(k, seenValue{deleted: true, rev: cur.rev + 1})
	return nil
}

// applyOAuth brings one shared client or grant into this node's store and
// service.
func (n *Node) applyOAuth(ctx context.Context, kind, id string, val []byte, deleted bool) error {
	if n.oauth == nil || n.oauthLocal == nil {
		return nil
	}
	switch {
	case kind == "oc" && deleted:
		n.oauth.ApplyClient(id, nil)
		if err := n.oauthLocal.DeleteOAuthClient(ctx, id); err != nil && hub.ErrorCode(err) != hub.ENOTFOUND {
			return err
		}
	case kind == "oc":
		var c hub.OAuthClient
		if err := json.Unmarshal(val, &c); err != nil || c.ID != id {
			return errors.Join(errors.New("malformed OAuth client"), err)
		}
		n.oauth.ApplyClient(id, &c)
		return n.oauthLocal.SaveOAuthClient(ctx, c)
	case kind == "og" && deleted:
		n.oauth.ApplyGrant(id, nil)
		if err := n.oauthLocal.DeleteOAuthGrant(ctx, id); err != nil && hub.ErrorCode(err) != hub.ENOTFOUND {
			return err
		}
	case kind == "og":
		var g hub.OAuthGrant
		if err := json.Unmarshal(val, &g); err != nil || g.ID != id {
			return errors.Join(errors.New("malformed OAuth grant"), err)
		}
		n.oauth.ApplyGrant(id, &g)
		return n.oauthLocal.SaveOAuthGrant(ctx, g)
	}
	return nil
}

// seedOAuth puts in the shared state the clients and grants only this
// node knew (a hub joining a cluster with MCP clients of its own).
func (n *Node) seedOAuth(ctx context.Context) error {
	if n.oauthLocal == nil {
		return nil
	}
	clients, grants, err := n.oauthLocal.LoadOAuth(ctx)
	if err != nil {
		return err
	}
	unknown := func(k string) bool {
		n.mu.Lock()
		defer n.mu.Unlock()
		_, ok := n.seen[k]
		return !ok
	}
	for _, c := range clients {
		if k := oauthClientKey(c.ID); unknown(k) {
			if err := n.putJSON(ctx, k, c); err != nil {
				return err
			}
		}
	}
	for _, g := range grants {
		if k := oauthGrantKey(g.ID); unknown(k) {
			if err := n.putJSON(ctx, k, g); err != nil {
				return err
			}
		}
	}
	return nil
}
