package oauth

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/xiaozhi-hub/hub"
)

// Register mounts the public OAuth endpoints on mux. None needs the admin
// token; the admin's decisions go through the /api routes (package api).
//
//	GET  /.well-known/oauth-protected-resource[/mcp]   RFC 9728
//	GET  /.well-known/oauth-authorization-server       RFC 8414
//	POST /oauth/register                               RFC 7591
//	GET  /oauth/authorize                              then the consent page
//	GET  /oauth/requests/{id}                          the consent page's state
//	POST /oauth/token                                  authorization_code, refresh_token
//	POST /oauth/revoke                                 RFC 7009
func (s *Service) Register(mux *http.ServeMux) {
	cors := func(h http.HandlerFunc) http.Handler { return allowBrowsers(h) }
	mux.Handle("/.well-known/oauth-protected-resource", cors(s.resourceMetadata))
	mux.Handle("/.well-known/oauth-protected-resource/mcp", cors(s.resourceMetadata))
	mux.Handle("/.well-known/oauth-authorization-server", cors(s.serverMetadata))
	mux.Handle("/oauth/register", cors(s.register))
	mux.Handle("/oauth/token", cors(s.token))
	mux.Handle("/oauth/revoke", cors(s.revoke))
	mux.HandleFunc("GET /oauth/authorize", s.authorize)
	mux.HandleFunc("GET /oauth/requests/{id}", s.requestState)
}

// allowBrowsers answers CORS for endpoints browser-based MCP clients (the
// MCP Inspector) call: they carry no cookies and no admin token, so any
// origin may call them.
func allowBrowsers(h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Access-Control-Allow-Origin", "*")
		hd.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, MCP-Protocol-Version")
		hd.Set("Access-Control-Allow-Methods", "GET, POST, OPTIONS")
		if r.Method == http.MethodOptions {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		h(w, r)
	})
}

func (s *Service) resourceMetadata(w http.ResponseWriter, r *http.Request) {
	if !only(w, r, http.MethodGet, http.MethodHead) {
		return
	}
	base := s.baseURL(r)
	writeJSON(w, http.StatusOK, map[string]any{
		"resource":                 base + "/mcp",
		"authorization_servers":    []string{base},
		"scopes_supported":         []string{Scope},
		"bearer_methods_supported": []string{"header"},
		"resource_name":            "xiaozhi-hub",
	})
}

func (s *Service) serverMetadata(w http.ResponseWriter, r *http.Request) {
	if !only(w, r, http.MethodGet, http.MethodHead) {
		return
	}
	base := s.baseURL(r)
	writeJSON(w, http.StatusOK, map[string]any{
		"issuer":                                         base,
		"authorization_endpoint":                         base + "/oauth/authorize",
		"token_endpoint":                                 base + "/oauth/token",
		"registration_endpoint":                          base + "/oauth/register",
		"revocation_endpoint":                            base + "/oauth/revoke",
		"scopes_supported":                               []string{Scope},
		"response_types_supported":                       []string{"code"},
		"grant_types_supported":                          []string{"authorization_code", "refresh_token"},
		"code_challenge_methods_supported":               []string{"S256"},
		"token_endpoint_auth_methods_supported":          []string{"none", "client_secret_post", "client_secret_basic"},
		"revocation_endpoint_auth_methods_supported":     []string{"none", "client_secret_post", "client_secret_basic"},
		"authorization_response_iss_parameter_supported": true,
	})
}

// ---- registration (RFC 7591)

type registration struct {
	RedirectURIs []string `json:"redirect_uris"`
	Name         string   `json:"client_name"`
	AuthMethod   string   `json:"token_endpoint_auth_method"`
	GrantTypes   []string `json:"grant_types"`
	Responses    []string `json:"response_types"`
}

func (s *Service) register(w http.ResponseWriter, r *http.Request) {
	if !only(w, r, http.MethodPost) {
		return
	}
	var m registration
	body := http.MaxBytesReader(w, r.Body, 16<<10)
	if err := json.NewDecoder(body).Decode(&m); err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_client_metadata", "the body must be a JSON object of client metadata (RFC 7591), at most 16 KiB: "+err.Error())
		return
	}
	if len(m.RedirectURIs) == 0 || len(m.RedirectURIs) > 8 {
		oauthError(w, http.StatusBadRequest, "invalid_redirect_uri", "give 1 to 8 redirect_uris")
		return
	}
	for _, u := range m.RedirectURIs {
		if err := checkRedirect(u); err != nil {
			oauthError(w, http.StatusBadRequest, "invalid_redirect_uri", err.Error())
			return
		}
	}
	for _, g := range m.GrantTypes {
		if g != "authorization_code" && g != "refresh_token" {
			oauthError(w, http.StatusBadRequest, "invalid_client_metadata", fmt.Sprintf("grant type %q is not offered: the hub grants authorization_code and refresh_token", g))
			return
		}
	}
	for _, rt := range m.Responses {
		if rt != "code" {
			oauthError(w, http.StatusBadRequest, "invalid_client_metadata", fmt.Sprintf("response type %q is not offered: the hub answers with code", rt))
			return
		}
	}
	switch m.AuthMethod {
	case "":
		m.AuthMethod = "client_secret_basic" // RFC 7591 §2
	case "none", "client_secret_post", "client_secret_basic":
	default:
		oauthError(w, http.StatusBadRequest, "invalid_client_metadata", fmt.Sprintf("token_endpoint_auth_method %q is not offered: use none (with PKCE), client_secret_post or client_secret_basic", m.AuthMethod))
		return
	}
	name := strings.TrimSpace(m.Name)
	if name == "" {
		name = "unnamed client"
	}
	if !utf8.ValidString(name) || utf8.RuneCountInString(name) > 200 {
		oauthError(w, http.StatusBadRequest, "invalid_client_metadata", "client_name must be valid UTF-8 of at most 200 characters")
		return
	}
	c := hub.OAuthClient{ID: newID("xzh_client_"), Name: name, RedirectURIs: m.RedirectURIs, AuthMethod: m.AuthMethod,
		Registered: s.now().UTC(), Address: hub.Host(r.RemoteAddr)}
	var secret string
	if c.AuthMethod != "none" {
		var h [32]byte
		secret, h = newSecret("xzh_cs_")
		c.SecretHash = h[:]
	}
	// The cap is checked, an unapproved client evicted and the new one
	// added in one hold of mu: concurrent registrations cannot all see room.
	s.mu.Lock()
	var victim string
	if len(s.clients) >= MaxClients {
		if victim = s.oldestUnapproved(); victim == "" {
			s.mu.Unlock()
			oauthError(w, http.StatusServiceUnavailable, "temporarily_unavailable",
				fmt.Sprintf("the hub already has %d approved MCP clients; revoke one in the dashboard first", MaxClients))
			return
		}
		s.dropClient(victim)
	}
	s.clients[c.ID] = &c
	s.mu.Unlock()
	if victim != "" {
		if err := s.store.DeleteOAuthClient(r.Context(), victim); err != nil && hub.ErrorCode(err) != hub.ENOTFOUND {
			s.log.Warn("could not forget an evicted OAuth client", "client", victim, "err", err)
		}
	}
	if err := s.store.SaveOAuthClient(r.Context(), c); err != nil {
		s.mu.Lock()
		delete(s.clients, c.ID)
		s.mu.Unlock()
		s.log.Error("could not store an OAuth client", "err", err)
		oauthError(w, http.StatusInternalServerError, "server_error", "the hub could not store the registration; try again")
		return
	}
	// Under a flood of registrations, this one may have been evicted while
	// it was being stored (its eviction's removal from the store may have
	// come first): the store must not keep what memory dropped.
	s.mu.Lock()
	evicted := s.clients[c.ID] == nil
	s.mu.Unlock()
	if evicted {
		if err := s.store.DeleteOAuthClient(r.Context(), c.ID); err != nil && hub.ErrorCode(err) != hub.ENOTFOUND {
			s.log.Warn("could not forget an evicted OAuth client", "client", c.ID, "err", err)
		}
		oauthError(w, http.StatusServiceUnavailable, "temporarily_unavailable",
			fmt.Sprintf("a flood of registrations pushed this one out at once (the hub keeps %d clients); try again", MaxClients))
		return
	}
	s.log.Info("MCP client registered", "client", c.ID, "name", c.Name, "from", c.Address)
	out := map[string]any{
		"client_id": c.ID, "client_id_issued_at": c.Registered.Unix(), "client_name": c.Name,
		"redirect_uris": c.RedirectURIs, "token_endpoint_auth_method": c.AuthMethod,
		"grant_types": []string{"authorization_code", "refresh_token"}, "response_types": []string{"code"}, "scope": Scope,
	}
	if secret != "" {
		out["client_secret"] = secret
		out["client_secret_expires_at"] = 0
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusCreated, out)
}

// oldestUnapproved is the client registered longest ago that has no grant,
// no authorization waiting or decided and no code to exchange, or "".
// Callers hold mu.
func (s *Service) oldestUnapproved() string {
	busy := map[string]bool{}
	for _, g := range s.grants {
		busy[g.ClientID] = true
	}
	for _, r := range s.requests {
		busy[r.ClientID] = true
	}
	for _, c := range s.codes {
		busy[c.clientID] = true
	}
	var victim *hub.OAuthClient
	for _, c := range s.clients {
		if !busy[c.ID] && (victim == nil || c.Registered.Before(victim.Registered)) {
			victim = c
		}
	}
	if victim == nil {
		return ""
	}
	return victim.ID
}

// ---- authorization

func (s *Service) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	clientID, redirect := q.Get("client_id"), q.Get("redirect_uri")
	s.mu.Lock()
	c := s.clients[clientID]
	var uris []string
	if c != nil {
		uris = c.RedirectURIs
	}
	s.mu.Unlock()
	// Until the redirect URI is known to be the client's, errors are shown
	// here, never sent anywhere.
	if c == nil {
		page(w, http.StatusBadRequest, "Unknown client", "This MCP client is not registered at this hub (client_id "+strconvQuote(clientID)+"). Remove the server from the client and add it again: it registers itself.")
		return
	}
	if redirect == "" && len(uris) == 1 {
		redirect = uris[0]
	}
	if !slices.ContainsFunc(uris, func(u string) bool { return redirectMatches(u, redirect) }) {
		page(w, http.StatusBadRequest, "Wrong redirect URI", "The redirect_uri "+strconvQuote(redirect)+" is not one this client registered.")
		return
	}
	state := q.Get("state")
	fail := func(code, desc string) {
		http.Redirect(w, r, withQuery(redirect, "error", code, "error_description", desc, "state", state), http.StatusFound)
	}
	switch {
	case q.Get("response_type") != "code":
		fail("unsupported_response_type", "the hub answers response_type=code only")
		return
	case q.Get("code_challenge") == "":
		fail("invalid_request", "PKCE is required: send code_challenge and code_challenge_method=S256")
		return
	case q.Get("code_challenge_method") != "S256":
		fail("invalid_request", "code_challenge_method must be S256")
		return
	case len(q.Get("code_challenge")) < 43 || len(q.Get("code_challenge")) > 128:
		fail("invalid_request", "code_challenge must be 43 to 128 characters")
		return
	}
	resource := s.baseURL(r) + "/mcp"
	if res := q.Get("resource"); res != "" && !sameResource(res, resource) {
		fail("invalid_target", "this hub issues tokens for "+resource+" only")
		return
	}
	now := s.now()
	req := &request{ID: newID("xzh_req_"), ClientID: c.ID, RedirectURI: redirect, State: state,
		Challenge: q.Get("code_challenge"), Resource: resource, Created: now, Address: hub.Host(r.RemoteAddr), key: addressKey(r.RemoteAddr)}
	s.mu.Lock()
	s.expire(now)
	wait, full := s.makeRoom(req.key, now)
	if full != "" {
		s.mu.Unlock()
		s.log.Debug("MCP authorization refused: too many waiting", "client", c.ID, "from", req.Address)
		w.Header().Set("Retry-After", strconv.Itoa(int(wait.Seconds())+1))
		page(w, http.StatusTooManyRequests, "Too many authorizations waiting", full)
		return
	}
	s.requests[req.ID] = req
	s.mu.Unlock()
	s.log.Info("MCP client asks for authorization", "client", c.ID, "name", c.Name, "from", req.Address)
	http.Redirect(w, r, s.baseURL(r)+"/oauth/consent#"+req.ID, http.StatusFound)
}

// makeRoom makes room for one more authorization from the address key:
// at most MaxPendingPerAddress waiting from one address, MaxPending in
// all. Only requests nobody has opened the consent page of, from the same
// address, make way (oldest first): a flood from elsewhere never pushes
// out a person's request, and one an address's person is looking at is
// never pushed out at all. When no request may make way, it returns why,
// for the person, and how long until the oldest in the way expires.
// Callers hold mu (and have expired the old requests).
func (s *Service) makeRoom(key string, now time.Time) (time.Duration, string) {
	for {
		var mine int
		var victim, oldest *request
		for _, o := range s.requests {
			if o.key != key || o.decided != "" {
				continue
			}
			mine++
			if oldest == nil || o.Created.Before(oldest.Created) {
				oldest = o
			}
			if !o.seen && (victim == nil || o.Created.Before(victim.Created)) {
				victim = o
			}
		}
		perAddress := mine >= MaxPendingPerAddress
		if !perAddress && len(s.requests) < MaxPending {
			return 0, ""
		}
		if victim != nil {
			delete(s.requests, victim.ID)
			continue
		}
		if perAddress {
			return oldest.Created.Add(RequestTTL).Sub(now), fmt.Sprintf("%d authorizations from your address are already waiting for a decision on "+
				"their consent pages. Decide or close those (they expire %s after they were asked for), then start again from the MCP client.",
				MaxPendingPerAddress, RequestTTL)
		}
		first := now
		for _, o := range s.requests {
			if o.Created.Before(first) {
				first = o.Created
			}
		}
		return first.Add(RequestTTL).Sub(now), fmt.Sprintf("The hub already has %d authorizations waiting for a decision, the most it keeps. "+
			"Ask the hub's admin to decide the waiting ones in the dashboard, or try again in a few minutes (they expire %s after they were asked for).",
			MaxPending, RequestTTL)
	}
}

// addressKey is the address a request's limits are counted under
// (hub.SourceKey). RemoteAddr is already the client's behind a trusted
// proxy (the trusted-proxies setting).
func addressKey(remote string) string { return hub.SourceKey(remote) }

// sameResource compares resource indicators, ignoring a trailing slash and
// the host's case.
func sameResource(a, b string) bool {
	ua, err1 := url.Parse(a)
	ub, err2 := url.Parse(b)
	if err1 != nil || err2 != nil {
		return false
	}
	return strings.EqualFold(ua.Scheme, ub.Scheme) && strings.EqualFold(ua.Host, ub.Host) &&
		strings.TrimSuffix(ua.Path, "/") == strings.TrimSuffix(ub.Path, "/")
}

// requestState is what the consent page shows and waits for. The id is a
// 128-bit secret only the client's browser and the admin know.
func (s *Service) requestState(w http.ResponseWriter, r *http.Request) {
	now := s.now()
	s.mu.Lock()
	s.expire(now)
	req := s.requests[r.PathValue("id")]
	var v Pending
	var decided, next string
	if req != nil {
		req.seen = true // a person has the consent page open: never pushed out
		v, decided, next = s.view(req), req.decided, req.redirect
	}
	s.mu.Unlock()
	w.Header().Set("Cache-Control", "no-store")
	if req == nil {
		oauthError(w, http.StatusNotFound, "invalid_request", "this authorization is unknown or expired; start again from the MCP client")
		return
	}
	status := "waiting"
	if decided != "" {
		status = decided
	}
	writeJSON(w, http.StatusOK, map[string]any{"status": status, "request": v, "next": next})
}

// ---- tokens

func (s *Service) token(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	c, ok := s.clientRequest(w, r)
	if !ok {
		return
	}
	if res := r.PostForm.Get("resource"); res != "" && !sameResource(res, s.baseURL(r)+"/mcp") {
		oauthError(w, http.StatusBadRequest, "invalid_target", "this hub issues tokens for "+s.baseURL(r)+"/mcp only")
		return
	}
	switch r.PostForm.Get("grant_type") {
	case "authorization_code":
		s.exchange(w, r, c)
	case "refresh_token":
		s.refreshGrant(w, r, c)
	default:
		oauthError(w, http.StatusBadRequest, "unsupported_grant_type", "grant_type must be authorization_code or refresh_token")
	}
}

// clientRequest reads a client's POST to the token or revocation
// endpoint (a form, at most 16 KiB) and authenticates the client, or
// answers the error and reports false.
func (s *Service) clientRequest(w http.ResponseWriter, r *http.Request) (*hub.OAuthClient, bool) {
	if !only(w, r, http.MethodPost) {
		return nil, false
	}
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	if err := r.ParseForm(); err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_request", "the body must be application/x-www-form-urlencoded, at most 16 KiB")
		return nil, false
	}
	c, err := s.authenticate(r)
	if err != nil {
		w.Header().Set("WWW-Authenticate", `Basic realm="xiaozhi-hub"`)
		oauthError(w, http.StatusUnauthorized, "invalid_client", err.Error())
		return nil, false
	}
	return c, true
}

// authenticate finds the client of a token or revocation request and
// checks its secret, if it has one.
func (s *Service) authenticate(r *http.Request) (*hub.OAuthClient, error) {
	id, secret, basic := r.BasicAuth()
	if basic {
		id, _ = url.QueryUnescape(id)
		secret, _ = url.QueryUnescape(secret)
	} else {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	s.mu.Lock()
	c := s.clients[id]
	s.mu.Unlock()
	if c == nil {
		return nil, fmt.Errorf("%w: client %s is not registered here (it may have been revoked): register again", errNoClient, strconvQuote(id))
	}
	if c.AuthMethod == "none" {
		return c, nil
	}
	h := sha256.Sum256([]byte(secret))
	if secret == "" || subtle.ConstantTimeCompare(h[:], c.SecretHash) != 1 {
		return nil, errors.New("the client secret is missing or wrong")
	}
	return c, nil
}

func (s *Service) exchange(w http.ResponseWriter, r *http.Request, c *hub.OAuthClient) {
	f := r.PostForm
	h := sha256.Sum256([]byte(f.Get("code")))
	now := s.now()
	s.mu.Lock()
	cd := s.codes[h]
	delete(s.codes, h) // used once, whatever happens next
	s.mu.Unlock()
	switch {
	case cd == nil || !now.Before(cd.expires):
		oauthError(w, http.StatusBadRequest, "invalid_grant", "the authorization code is unknown, used or expired (codes live "+CodeTTL.String()+")")
		return
	case cd.clientID != c.ID:
		oauthError(w, http.StatusBadRequest, "invalid_grant", "the authorization code was issued to another client")
		return
	case f.Get("redirect_uri") != "" && f.Get("redirect_uri") != cd.redirectURI:
		oauthError(w, http.StatusBadRequest, "invalid_grant", "redirect_uri differs from the one of the authorization")
		return
	case !verifierMatches(f.Get("code_verifier"), cd.challenge):
		oauthError(w, http.StatusBadRequest, "invalid_grant", "code_verifier does not match the code_challenge (PKCE S256)")
		return
	}
	g := &hub.OAuthGrant{ID: newID("xzh_grant_"), ClientID: c.ID, User: cd.user, Approved: now.UTC()}
	access, refresh := s.mint(g, now)
	s.mu.Lock()
	if s.clients[c.ID] == nil { // revoked meanwhile
		s.mu.Unlock()
		oauthError(w, http.StatusBadRequest, "invalid_grant", "the client was revoked")
		return
	}
	var drop []*hub.OAuthGrant
	for _, o := range s.grants {
		if o.ClientID == c.ID {
			drop = append(drop, o)
		}
	}
	slices.SortFunc(drop, func(a, b *hub.OAuthGrant) int { return a.Approved.Compare(b.Approved) })
	if n := len(drop) - (MaxGrantsPerClient - 1); n > 0 {
		drop = drop[:n]
	} else {
		drop = nil
	}
	for _, o := range drop {
		s.unindex(o)
	}
	s.index(g)
	saved := *g
	s.mu.Unlock()
	for _, o := range drop {
		if err := s.store.DeleteOAuthGrant(r.Context(), o.ID); err != nil {
			s.log.Warn("could not forget an old OAuth grant", "client", c.ID, "err", err)
		}
	}
	if err := s.store.SaveOAuthGrant(r.Context(), saved); err != nil {
		s.mu.Lock()
		s.unindex(g)
		s.mu.Unlock()
		s.log.Error("could not store an OAuth grant", "err", err)
		oauthError(w, http.StatusInternalServerError, "server_error", "the hub could not store the tokens; start again")
		return
	}
	s.log.Info("MCP client authorized", "client", c.ID, "name", c.Name)
	writeTokens(w, access, refresh)
}

func (s *Service) refreshGrant(w http.ResponseWriter, r *http.Request, c *hub.OAuthClient) {
	h := sha256.Sum256([]byte(r.PostForm.Get("refresh_token")))
	now := s.now()
	s.mu.Lock()
	g := s.refresh[h]
	if g == nil {
		if rg := s.grants[s.rotated[h]]; rg != nil && rg.ClientID == c.ID {
			s.replayed(w, r, rg)
			return
		}
	}
	if g == nil || g.ClientID != c.ID || !now.Before(g.RefreshExpires) {
		s.mu.Unlock()
		oauthError(w, http.StatusBadRequest, "invalid_grant", "the refresh token is unknown, used, revoked or expired: authorize again")
		return
	}
	s.unindex(g)
	ng := *g
	ng.Rotated = append(slices.Clone(g.Rotated), g.RefreshHash)
	if n := len(ng.Rotated) - MaxRotated; n > 0 {
		ng.Rotated = ng.Rotated[n:]
	}
	access, refresh := s.mint(&ng, now)
	s.index(&ng)
	saved := ng
	s.mu.Unlock()
	if err := s.store.SaveOAuthGrant(r.Context(), saved); err != nil {
		s.log.Error("could not store refreshed OAuth tokens", "err", err)
		oauthError(w, http.StatusInternalServerError, "server_error", "the hub could not store the tokens; try again")
		return
	}
	writeTokens(w, access, refresh)
}

// replayed answers a refresh with a token g already replaced: two parties
// hold g's refresh tokens, the client and someone who copied one, and the
// hub cannot tell which is which, so g ends, its current access and
// refresh tokens with it (OAuth 2.1 §4.3.1, RFC 9700 §4.14.2); the person
// authorizes the client again. Callers hold mu; it is released.
func (s *Service) replayed(w http.ResponseWriter, r *http.Request, g *hub.OAuthGrant) {
	s.unindex(g)
	s.mu.Unlock()
	s.log.Warn("a replaced OAuth refresh token was presented again: its grant is revoked", "client", g.ClientID, "grant", g.ID, "from", hub.Host(r.RemoteAddr))
	if err := s.store.DeleteOAuthGrant(r.Context(), g.ID); err != nil {
		s.log.Error("could not forget a revoked OAuth grant", "client", g.ClientID, "err", err)
	}
	oauthError(w, http.StatusBadRequest, "invalid_grant", "this refresh token was already used and replaced by a newer one; "+
		"a used token presented again means the tokens may have leaked, so the hub revoked this authorization with all its tokens: authorize again")
}

// mint gives g a new access and refresh token; the old ones stop working
// when g is indexed in their place.
func (s *Service) mint(g *hub.OAuthGrant, now time.Time) (access, refresh string) {
	access, ah := newSecret("xzh_at_")
	refresh, rh := newSecret("xzh_rt_")
	g.AccessHash, g.RefreshHash = ah[:], rh[:]
	g.AccessExpires, g.RefreshExpires = now.Add(AccessTTL).UTC(), now.Add(RefreshTTL).UTC()
	return access, refresh
}

func writeTokens(w http.ResponseWriter, access, refresh string) {
	writeJSON(w, http.StatusOK, map[string]any{
		"access_token": access, "token_type": "Bearer", "expires_in": int(AccessTTL.Seconds()),
		"refresh_token": refresh, "scope": Scope,
	})
}

func verifierMatches(verifier, challenge string) bool {
	if len(verifier) < 43 || len(verifier) > 128 {
		return false
	}
	sum := sha256.Sum256([]byte(verifier))
	got := base64.RawURLEncoding.EncodeToString(sum[:])
	return subtle.ConstantTimeCompare([]byte(got), []byte(challenge)) == 1
}

// revoke ends the grant a token belongs to (RFC 7009): answered 200
// whether or not the token was known.
func (s *Service) revoke(w http.ResponseWriter, r *http.Request) {
	c, ok := s.clientRequest(w, r)
	if !ok {
		return
	}
	h := sha256.Sum256([]byte(r.PostForm.Get("token")))
	s.mu.Lock()
	g := s.access[h]
	if g == nil {
		g = s.refresh[h]
	}
	if g != nil && g.ClientID == c.ID {
		s.unindex(g)
	} else {
		g = nil
	}
	s.mu.Unlock()
	if g != nil {
		if err := s.store.DeleteOAuthGrant(r.Context(), g.ID); err != nil {
			s.log.Warn("could not forget a revoked OAuth grant", "client", c.ID, "err", err)
		}
	}
	w.WriteHeader(http.StatusOK)
}

// ---- writers

func only(w http.ResponseWriter, r *http.Request, methods ...string) bool {
	if slices.Contains(methods, r.Method) {
		return true
	}
	w.Header().Set("Allow", strings.Join(methods, ", "))
	oauthError(w, http.StatusMethodNotAllowed, "invalid_request", "method "+r.Method+" is not allowed here; use "+strings.Join(methods, " or "))
	return false
}

func oauthError(w http.ResponseWriter, status int, code, desc string) {
	writeJSON(w, status, map[string]string{"error": code, "error_description": desc})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// page is a plain error page for a person in a browser.
func page(w http.ResponseWriter, status int, title, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	fmt.Fprintf(w, "%s\n\n%s\n", title, msg)
}

func strconvQuote(s string) string {
	if len(s) > 80 {
		s = s[:80] + "…"
	}
	return fmt.Sprintf("%q", s)
}
