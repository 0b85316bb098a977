package server

import "github.com/xiaozhi-hub/hub/accounts"

// PeopleOf is h's accounts service, for the tests of package server_test
// that make users, homes and logins without the HTTP routes.
func PeopleOf(h *Hub) *accounts.Service { return h.accounts }
