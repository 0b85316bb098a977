package api

import (
	"context"
	"crypto/sha256"
	"net/http"

	"github.com/xiaozhi-hub/hub"
)

// OAuth is the hub's authorization server for /mcp (oauth.Service): the
// admin's side of it (authorizations waiting for a person, approved
// clients, revocation) and the check of its access tokens at /mcp.
type OAuth interface {
	Pending() []hub.OAuthPending
	Decide(id string, approve bool) (hub.OAuthPending, error)
	Clients() []hub.OAuthClientView
	Revoke(ctx context.Context, clientID string) error
	// AccessToken reports whether token is a live OAuth access token.
	AccessToken(ctx context.Context, token string) bool
	// ResourceMetadataURL is named in /mcp's 401, so that MCP clients
	// find the authorization server.
	ResourceMetadataURL(r *http.Request) string
}

func (s *Server) oauthRoutes() []route {
	if s.oauth == nil {
		return nil
	}
	return []route{
		{"/api/oauth/requests", []methodHandler{{"GET", s.listOAuthRequests}}},
		{"/api/oauth/requests/{id}/approve", []methodHandler{{"POST", s.decideOAuth(true)}}},
		{"/api/oauth/requests/{id}/deny", []methodHandler{{"POST", s.decideOAuth(false)}}},
		{"/api/oauth/clients", []methodHandler{{"GET", s.listOAuthClients}}},
		{"/api/oauth/clients/{id}", []methodHandler{{"DELETE", s.revokeOAuthClient}}},
	}
}

// listOAuthRequests answers {"requests":[…]}: MCP clients waiting for a
// person to let them use /mcp, oldest first.
func (s *Server) listOAuthRequests(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"requests": s.oauth.Pending()})
}

func (s *Server) decideOAuth(approve bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		p, err := s.oauth.Decide(r.PathValue("id"), approve)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		s.log.Info("MCP client authorization decided", "client", p.ClientID, "name", p.ClientName, "approved", approve)
		writeJSON(w, http.StatusOK, map[string]any{"request": p, "approved": approve})
	}
}

// listOAuthClients answers {"clients":[…]}: registered MCP clients with
// their grants (approval time, token expiries, last use).
func (s *Server) listOAuthClients(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"clients": s.oauth.Clients()})
}

func (s *Server) revokeOAuthClient(w http.ResponseWriter, r *http.Request) {
	if err := s.oauth.Revoke(r.Context(), r.PathValue("id")); err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// requireMCPToken admits the admin token or an OAuth access token. Its
// 401 names the protected-resource metadata (RFC 9728 §5.1), which is how
// MCP clients (Claude, ChatGPT, the MCP Inspector) start the OAuth flow.
func (s *Server) requireMCPToken(next http.Handler) http.Handler {
	if s.oauth == nil {
		return RequireToken(s.token, next)
	}
	admin := sha256.Sum256([]byte(s.token))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, ok := bearer(r)
		if ok && (s.oauth.AccessToken(r.Context(), tok) || matches(admin, tok)) {
			next.ServeHTTP(w, r)
			return
		}
		meta := s.oauth.ResourceMetadataURL(r)
		if !ok {
			unauthorized(w, `Bearer realm="xiaozhi-hub", resource_metadata="`+meta+`"`,
				"/mcp needs a token: the admin token (\"Authorization: Bearer <token>\"), or an OAuth access token that MCP clients get by themselves from "+meta)
			return
		}
		unauthorized(w, `Bearer realm="xiaozhi-hub", error="invalid_token", resource_metadata="`+meta+`"`,
			"the bearer token is neither the admin token nor a live OAuth access token (it may have expired or been revoked)")
	})
}
