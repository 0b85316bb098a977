package api

import (
	"crypto/sha256"
	"net/http"

	"github.com/xiaozhi-hub/hub"
)

// Accounts is the hub's people (accounts.Service) as the API uses them.
type Accounts interface {
	// Resolve returns the principal of a user's token (a login or a
	// personal token), or EUNAUTHORIZED.
	Resolve(secret string) (*hub.Principal, error)
	// Principal returns a user's principal as of now (their homes), or false.
	Principal(user string) (*hub.Principal, bool)
}

// requirePrincipal lets through requests that prove who they are, with
// their principal in the request's context (hub.WithPrincipal): the admin
// token (hub.Admin), or a user's token. Anything else gets 401 and the
// error JSON, with a WWW-Authenticate: Bearer challenge.
func (s *Server) requirePrincipal(next http.Handler) http.Handler {
	admin := sha256.Sum256([]byte(s.token))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, err := s.authenticate(r, admin)
		if err != nil {
			challenge := `Bearer realm="xiaozhi-hub"`
			if hub.ErrorCode(err) == hub.EUNAUTHORIZED && hasBearer(r) {
				challenge += `, error="invalid_token"`
			}
			w.Header().Set("WWW-Authenticate", challenge)
			writeError(w, s.log, err)
			return
		}
		inner := r.WithContext(hub.WithPrincipal(r.Context(), p))
		next.ServeHTTP(w, inner)
		r.Pattern = inner.Pattern // the route's pattern, for the request metrics (internal/httpx)
	})
}

// authenticate says who r is.
func (s *Server) authenticate(r *http.Request, admin [32]byte) (*hub.Principal, error) {
	tok, ok := bearer(r)
	if !ok {
		return nil, hub.Errorf(hub.EUNAUTHORIZED, "this endpoint needs a token: send the header \"Authorization: Bearer <token>\" with the admin token or a user's token (POST /api/login gives one)")
	}
	if matches(admin, tok) {
		return hub.Admin, nil
	}
	if s.accounts != nil {
		if p, err := s.accounts.Resolve(tok); err == nil {
			return p, nil
		} else if hub.ErrorCode(err) != hub.EUNAUTHORIZED {
			return nil, err
		}
	}
	return nil, hub.Errorf(hub.EUNAUTHORIZED, "the bearer token is neither the hub's admin token nor a live user token (it may have expired or been revoked; POST /api/login gives a new one)")
}

func hasBearer(r *http.Request) bool {
	_, ok := bearer(r)
	return ok
}

// principal returns the principal requirePrincipal put in r's context.
func principal(r *http.Request) *hub.Principal {
	if p := hub.PrincipalFrom(r.Context()); p != nil {
		return p
	}
	return hub.Admin // only reachable from tests that mount a handler bare
}
