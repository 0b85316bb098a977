package server

import (
	"context"

	"github.com/xiaozhi-hub/hub/accounts"
)

// openAccounts loads the hub's people (users, homes, tokens).
func (h *Hub) openAccounts(ctx context.Context) error {
	h.accounts = accounts.New(h.store, accounts.Options{Logger: h.log.With("component", "accounts")})
	return h.accounts.Load(ctx)
}
