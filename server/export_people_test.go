package server

import "github.com/xiaozhi-hub/hub/accounts"

// AccountsOf gives tests the hub's people, to set up users and homes
// without the API's routes.
func AccountsOf(h *Hub) *accounts.Service { return h.accounts }
