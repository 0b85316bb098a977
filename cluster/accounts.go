package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/xiaozhi-hub/hub"
)

// The hub's people are the cluster's too: users (au.<name>), homes with
// their members (ah.<id>) and users' tokens, logins and personal ones
// (at.<id>, the secret's hash only), are kept in the state bucket and
// applied on every node. A login on one node opens every node; a token
// revoked, a member removed or a user deleted on one node is refused on
// the others as soon as their watch applies it. Which home a device is in
// is a field of its record (d.<id>), merged like its name.

// AccountsStore is the accounts service's store (accounts.Store).
type AccountsStore interface {
	LoadAccounts(ctx context.Context) ([]hub.User, []hub.Home, []hub.UserToken, error)
	SaveUser(ctx context.Context, u hub.User) error
	DeleteUser(ctx context.Context, name string) error // and the user's tokens
	SaveHome(ctx context.Context, h hub.Home) error
	DeleteHome(ctx context.Context, id string) error
	SaveToken(ctx context.Context, t hub.UserToken) error
	DeleteToken(ctx context.Context, id string) error
}

// AccountsService is the accounts service as the cluster keeps it up to
// date (accounts.Service); nil means deleted.
type AccountsService interface {
	ApplyUser(name string, u *hub.User)
	ApplyHome(id string, h *hub.Home)
	ApplyToken(id string, t *hub.UserToken)
}

func userKey(name string) string { return "au." + key(name) }
func homeKey(id string) string   { return "ah." + key(id) }
func tokenKey(id string) string  { return "at." + key(id) }

// AccountsStore wraps the accounts service's own store: every change goes
// to the shared state first.
func (n *Node) AccountsStore(local AccountsStore) AccountsStore {
	n.accountsLocal = local
	return &sharedAccounts{AccountsStore: local, n: n}
}

// ServeAccounts keeps svc up to date with the other nodes' changes. Call
// it before Start.
func (n *Node) ServeAccounts(svc AccountsService) { n.accounts = svc }

type sharedAccounts struct {
	AccountsStore
	n *Node
}

func unshared(what string, err error) error {
	return hub.Errorf(hub.EUNAVAILABLE, "the cluster's shared state did not take %s: %v", what, err)
}

// SaveUser shares a user. For a new one, any token left in the shared
// state from an earlier user of the same name (one made on a node while
// another deleted that user) is removed first: it must not open the new
// user's account.
func (s *sharedAccounts) SaveUser(ctx context.Context, u hub.User) error {
	k := userKey(u.Name)
	s.n.mu.Lock()
	cur, known := s.n.seen[k]
	s.n.mu.Unlock()
	if !known || cur.deleted {
		for _, tk := range s.n.tokensOf(u.Name) {
			if err := s.n.remove(ctx, tk); err != nil {
				return unshared("the user "+u.Name, err)
			}
		}
	}
	if err := s.n.putJSON(ctx, k, u); err != nil {
		return unshared("the user "+u.Name, err)
	}
	return s.AccountsStore.SaveUser(ctx, u)
}

// DeleteUser removes the user and every token of theirs (the local store
// cascades; the bucket must be told each). The tokens go first: a node
// never holds a token whose user it has seen deleted.
func (s *sharedAccounts) DeleteUser(ctx context.Context, name string) error {
	keys := append(s.n.tokensOf(name), userKey(name))
	for _, k := range keys {
		if err := s.n.remove(ctx, k); err != nil {
			return unshared("the removal of the user "+name, err)
		}
	}
	return s.AccountsStore.DeleteUser(ctx, name)
}

func (s *sharedAccounts) SaveHome(ctx context.Context, h hub.Home) error {
	if err := s.n.putJSON(ctx, homeKey(h.ID), h); err != nil {
		return unshared("the home "+h.ID, err)
	}
	return s.AccountsStore.SaveHome(ctx, h)
}

// DeleteHome removes the home, and its own settings and persona, which
// each node's store deletes with it (settings.go).
func (s *sharedAccounts) DeleteHome(ctx context.Context, id string) error {
	for _, k := range append(s.n.homeSettingsKeys(id), personaKey("home", id), homeKey(id)) {
		if err := s.n.remove(ctx, k); err != nil {
			return unshared("the removal of the home "+id, err)
		}
	}
	return s.AccountsStore.DeleteHome(ctx, id)
}

func (s *sharedAccounts) SaveToken(ctx context.Context, t hub.UserToken) error {
	if err := s.n.putJSON(ctx, tokenKey(t.ID), t); err != nil {
		return unshared("a token", err)
	}
	return s.AccountsStore.SaveToken(ctx, t)
}

func (s *sharedAccounts) DeleteToken(ctx context.Context, id string) error {
	if err := s.n.remove(ctx, tokenKey(id)); err != nil {
		return unshared("the revocation of a token", err)
	}
	return s.AccountsStore.DeleteToken(ctx, id)
}

// tokensOf are the keys of the shared tokens of user name.
func (n *Node) tokensOf(name string) []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	var keys []string
	for k, v := range n.seen {
		if strings.HasPrefix(k, "at.") && !v.deleted {
			var t hub.UserToken
			if json.Unmarshal(v.val, &t) == nil && t.User == name {
				keys = append(keys, k)
			}
		}
	}
	return keys
}

// applyAccounts brings one shared user, home or token into this node's
// store and service. A change this node made meanwhile to the same key
// (a revocation racing the watch's delivery of the token's creation) is
// applied again after it, so that the newest value is the one kept.
func (n *Node) applyAccounts(ctx context.Context, k, kind, id string, val []byte, deleted bool) error {
	if n.accounts == nil || n.accountsLocal == nil {
		return nil
	}
	for range 4 {
		if err := n.applyAccount(ctx, kind, id, val, deleted); err != nil {
			return err
		}
		n.mu.Lock()
		now := n.seen[k]
		n.mu.Unlock()
		if now.deleted == deleted && (deleted || bytes.Equal(now.val, val)) {
			return nil
		}
		val, deleted = now.val, now.deleted
	}
	return nil
}

func (n *Node) applyAccount(ctx context.Context, kind, id string, val []byte, deleted bool) error {
	l, svc := n.accountsLocal, n.accounts
	switch kind {
	case "au":
		return shared[hub.User]{"user", func(u hub.User) string { return u.Name }, nil,
			l.SaveUser, l.DeleteUser, svc.ApplyUser}.apply(ctx, id, val, deleted)
	case "ah":
		return shared[hub.Home]{"home", func(h hub.Home) string { return h.ID }, nil,
			l.SaveHome, l.DeleteHome, svc.ApplyHome}.apply(ctx, id, val, deleted)
	case "at":
		// A token of a removed user was written after the removal, by a
		// node that had not seen it: it is not taken.
		return shared[hub.UserToken]{"user token", func(t hub.UserToken) string { return t.ID },
			func(t hub.UserToken) bool { return n.removedUser(t.User) },
			l.SaveToken, l.DeleteToken, svc.ApplyToken}.apply(ctx, id, val, deleted)
	}
	return nil
}

// shared is one kind of the people's shared records, as a node applies it:
// to its own store, then to its service.
type shared[T any] struct {
	what  string
	id    func(T) string
	skip  func(T) bool // if not nil: true for a record not to take
	save  func(context.Context, T) error
	drop  func(context.Context, string) error
	serve func(string, *T) // nil: deleted
}

func (r shared[T]) apply(ctx context.Context, id string, val []byte, deleted bool) error {
	if deleted {
		r.serve(id, nil)
		if err := r.drop(ctx, id); err != nil && hub.ErrorCode(err) != hub.ENOTFOUND {
			return err
		}
		return nil
	}
	var v T
	if err := json.Unmarshal(val, &v); err != nil || r.id(v) != id {
		return errors.Join(fmt.Errorf("malformed %s", r.what), err)
	}
	if r.skip != nil && r.skip(v) {
		return nil
	}
	if err := r.save(ctx, v); err != nil {
		return err
	}
	r.serve(id, &v)
	return nil
}

// removedUser reports whether the shared state, as this node has it,
// removed user name (and has not made a user of that name since). The
// watch delivers changes in the order they were made, so a token applied
// while its user is removed was made after the removal.
func (n *Node) removedUser(name string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	v, ok := n.seen[userKey(name)]
	return ok && v.deleted
}

// seedAccounts puts in the shared state the users, homes and tokens only
// this node knew (a hub joining a cluster with people of its own). What
// the shared state deleted stays deleted.
func (n *Node) seedAccounts(ctx context.Context) error {
	if n.accountsLocal == nil {
		return nil
	}
	users, homes, tokens, err := n.accountsLocal.LoadAccounts(ctx)
	if err != nil {
		return err
	}
	put := func(k string, v any) error {
		n.mu.Lock()
		_, known := n.seen[k]
		n.mu.Unlock()
		if known {
			return nil
		}
		return n.putJSON(ctx, k, v)
	}
	for _, u := range users {
		if err := put(userKey(u.Name), u); err != nil {
			return err
		}
	}
	for _, h := range homes {
		if err := put(homeKey(h.ID), h); err != nil {
			return err
		}
	}
	for _, t := range tokens {
		if err := put(tokenKey(t.ID), t); err != nil {
			return err
		}
	}
	return nil
}
