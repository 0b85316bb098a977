package api

import (
	"context"
	"crypto/sha256"
	"net/http"

	"github.com/xiaozhi-hub/hub"
)

// OAuth is the hub's authorization server for /mcp (oauth.Service): the
// people's side of it (authorizations waiting for a person, approved
// clients, revocation) and the check of its access tokens at /mcp.
type OAuth interface {
	Pending() []hub.OAuthPending
	// Decide approves or denies a waiting authorization as user ("": the
	// admin), whom the client then acts for.
	Decide(id string, approve bool, user string) (hub.OAuthPending, error)
	// Clients lists every client with every grant (each naming its user).
	Clients() []hub.OAuthClientView
	// Revoke forgets a client with all its grants; RevokeUser ends only
	// user's grants of it (ENOTFOUND when there are none).
	Revoke(ctx context.Context, clientID string) error
	RevokeUser(ctx context.Context, clientID, user string) error
	// AccessToken reports whether token is a live OAuth access token, and
	// whom it acts for: the approving user ("": the admin) and the
	// client's name.
	AccessToken(ctx context.Context, token string) (user, client string, ok bool)
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
// person to let them use /mcp, oldest first. Only the admin lists them; a
// person decides the one their consent page names.
func (s *Server) listOAuthRequests(w http.ResponseWriter, r *http.Request) {
	if !principal(r).Admin {
		s.fail(w, r, hub.Errorf(hub.EFORBIDDEN, "only the admin lists waiting MCP client authorizations; a person decides the one their consent page shows"))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"requests": s.oauth.Pending()})
}

// decideOAuth approves or denies as the person asking: the client then
// acts for them (the admin: as the admin).
func (s *Server) decideOAuth(approve bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		who := principal(r)
		if !who.Admin && (who.User == "" || who.Client != "" || who.Agent || who.Device != "") {
			s.fail(w, r, hub.Errorf(hub.EFORBIDDEN, "only a person (or the admin) decides an MCP client's authorization"))
			return
		}
		p, err := s.oauth.Decide(r.PathValue("id"), approve, who.User)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		s.log.Info("MCP client authorization decided", "client", p.ClientID, "name", p.ClientName, "approved", approve, "by", who.Actor())
		writeJSON(w, http.StatusOK, map[string]any{"request": p, "approved": approve})
	}
}

// listOAuthClients answers {"clients":[…]}: registered MCP clients with
// their grants (who approved, approval time, token expiries, last use).
// A person sees only the clients they approved, with their own grants.
func (s *Server) listOAuthClients(w http.ResponseWriter, r *http.Request) {
	p := principal(r)
	all := s.oauth.Clients()
	if p.Admin {
		writeJSON(w, http.StatusOK, map[string]any{"clients": all})
		return
	}
	mine := []hub.OAuthClientView{}
	for _, c := range all {
		grants := c.Grants[:0:0]
		for _, g := range c.Grants {
			if g.User != "" && g.User == p.User {
				grants = append(grants, g)
			}
		}
		if len(grants) > 0 {
			c.Grants, c.Address = grants, ""
			mine = append(mine, c)
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"clients": mine})
}

// revokeOAuthClient ends a client's grants: all of them and its
// registration (the admin), or the person's own.
func (s *Server) revokeOAuthClient(w http.ResponseWriter, r *http.Request) {
	p := principal(r)
	var err error
	if p.Admin {
		err = s.oauth.Revoke(r.Context(), r.PathValue("id"))
	} else {
		err = s.oauth.RevokeUser(r.Context(), r.PathValue("id"), p.User)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// requireMCPToken admits, at /mcp, the admin token, a user's token (a
// login or a personal token) or an OAuth access token, each request
// resolved afresh and carrying its principal (hub.WithPrincipal): an OAuth
// client acts for the person who approved it, with that person's homes as
// they are now. Its 401 names the protected-resource metadata (RFC 9728
// §5.1), which is how MCP clients (Claude, ChatGPT, the MCP Inspector)
// start the OAuth flow. Only the Authorization header counts here: no
// cookie, so that no page can make a browser call /mcp.
func (s *Server) requireMCPToken(next http.Handler) http.Handler {
	admin := sha256.Sum256([]byte(s.token))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, ok := bearer(r)
		if ok {
			if p := s.mcpPrincipal(r.Context(), tok, admin); p != nil {
				next.ServeHTTP(w, r.WithContext(hub.WithPrincipal(r.Context(), p)))
				return
			}
		}
		challenge, meta := `Bearer realm="xiaozhi-hub"`, ""
		if s.oauth != nil {
			meta = s.oauth.ResourceMetadataURL(r)
			challenge += `, resource_metadata="` + meta + `"`
		}
		if !ok {
			msg := "/mcp needs a token: the admin token or a user's token (\"Authorization: Bearer <token>\")"
			if meta != "" {
				msg += ", or an OAuth access token that MCP clients get by themselves from " + meta
			}
			unauthorized(w, challenge, msg)
			return
		}
		unauthorized(w, `Bearer realm="xiaozhi-hub", error="invalid_token"`+challenge[len(`Bearer realm="xiaozhi-hub"`):],
			"the bearer token is neither the admin token, nor a live user token, nor a live OAuth access token (it may have expired or been revoked)")
	})
}

// mcpPrincipal says whom tok acts for at /mcp, or nil.
func (s *Server) mcpPrincipal(ctx context.Context, tok string, admin [32]byte) *hub.Principal {
	if matches(admin, tok) {
		return hub.Admin
	}
	if s.accounts != nil {
		if p, err := s.accounts.Resolve(tok); err == nil {
			return p
		}
	}
	if s.oauth == nil {
		return nil
	}
	user, client, ok := s.oauth.AccessToken(ctx, tok)
	switch {
	case !ok:
		return nil
	case user == "": // approved by the admin
		return &hub.Principal{Admin: true, Client: client}
	case s.accounts == nil:
		return nil
	}
	p, ok := s.accounts.Principal(user)
	if !ok {
		return nil // the person is gone: so is what they approved
	}
	q := *p
	q.Client, q.Token = client, ""
	return &q
}
