package server

import (
	"context"

	"github.com/xiaozhi-hub/hub/accounts"
)

// openAccounts loads the hub's people (users, homes, tokens). In a
// cluster their store is the cluster's wrapper of this node's own: each
// change goes to the shared state first, and the node's watch, which
// loadRegistry starts next, applies the other nodes' changes to this
// service (first the whole shared state, then what only this node knew
// is shared).
func (h *Hub) openAccounts(ctx context.Context) error {
	var st accounts.Store = h.store
	c := h.cluster
	if c != nil {
		st = c.Node.AccountsStore(h.store)
	}
	h.accounts = accounts.New(st, accounts.Options{Logger: h.log.With("component", "accounts")})
	if err := h.accounts.Load(ctx); err != nil {
		return err
	}
	if c != nil {
		c.Node.ServeAccounts(h.accounts)
	}
	return nil
}
