// Package oauth is the hub's own OAuth 2.1 authorization server for /mcp,
// the flow MCP clients (Claude, ChatGPT connectors, the MCP Inspector, IDEs)
// expect from a remote MCP server:
//
//   - protected-resource metadata (RFC 9728) that names the hub as the
//     authorization server, and its metadata (RFC 8414);
//   - dynamic client registration (RFC 7591), open to anyone, granting
//     nothing by itself;
//   - the authorization-code grant with PKCE (S256 only), where a person
//     with the admin token approves each authorization, in the dashboard or
//     on the page the client opened;
//   - access tokens (1 h) valid at /mcp only, refresh tokens (30 d) rotated
//     on use, both stored as SHA-256 hashes; revocation (RFC 7009) and, for
//     the admin, revoking a client with all its tokens.
//
// Every input is bounded: at most 100 clients (unapproved ones are evicted
// first), 64 authorizations waiting, 8 of them from one address (only
// unopened ones from the same address make way; beyond that a new one is
// refused), 10 grants per client; codes live 60 s and are used once. A
// refresh token presented after it was rotated revokes its grant (OAuth
// 2.1 §4.3.1). The admin's bearer token stays valid at /mcp for scripts.
package oauth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/xiaozhi-hub/hub"
)

// Store keeps clients and grants (store.Store implements it).
type Store interface {
	LoadOAuth(ctx context.Context) ([]hub.OAuthClient, []hub.OAuthGrant, error)
	SaveOAuthClient(ctx context.Context, c hub.OAuthClient) error
	DeleteOAuthClient(ctx context.Context, clientID string) error
	SaveOAuthGrant(ctx context.Context, g hub.OAuthGrant) error
	DeleteOAuthGrant(ctx context.Context, grantID string) error
}

// Limits and lifetimes.
const (
	MaxClients           = 100
	MaxPending           = 64
	MaxPendingPerAddress = 8
	MaxGrantsPerClient   = 10
	// MaxRotated is how many of a grant's replaced refresh tokens are
	// remembered (as hashes) to notice one presented again: more than a
	// day of hourly refreshes.
	MaxRotated    = 32
	AccessTTL     = time.Hour
	RefreshTTL    = 30 * 24 * time.Hour
	RequestTTL    = 10 * time.Minute
	CodeTTL       = time.Minute
	lastUsedEvery = 5 * time.Minute
)

// Scope is the one scope the hub grants: its MCP server.
const Scope = "mcp"

// Options configures a Service.
type Options struct {
	// PublicURL is the hub's base URL as clients reach it (the public-url
	// setting); "" derives it from each request's Host.
	PublicURL string
	Logger    *slog.Logger
	Now       func() time.Time // for tests; default time.Now
}

// Service is the authorization server. Its state lives in memory, written
// through to the Store.
type Service struct {
	store Store
	base  string
	log   *slog.Logger
	now   func() time.Time

	mu       sync.Mutex
	clients  map[string]*hub.OAuthClient
	grants   map[string]*hub.OAuthGrant
	access   map[[32]byte]*hub.OAuthGrant
	refresh  map[[32]byte]*hub.OAuthGrant
	rotated  map[[32]byte]string  // a replaced refresh token's hash → its grant's id
	saved    map[string]time.Time // grant id → LastUsed last written
	requests map[string]*request  // authorizations waiting or decided, by id
	codes    map[[32]byte]*code
}

// request is an authorization a client asked for, waiting for a person.
type request struct {
	ID          string
	ClientID    string
	RedirectURI string
	State       string
	Challenge   string
	Resource    string
	Created     time.Time
	Address     string
	key         string // the address its limit is counted under (addressKey)
	seen        bool   // the consent page has fetched it: a person may be looking at it
	decided     string // "" waiting, "approved", "denied"
	redirect    string // where the client's browser goes once decided
}

// code is an authorization code: approved, not yet exchanged.
type code struct {
	clientID, redirectURI, challenge string
	user                             string // who approved ("": the admin)
	expires                          time.Time
}

// New loads the clients and grants from st.
func New(ctx context.Context, st Store, opts Options) (*Service, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	s := &Service{
		store: st, base: trimSlash(opts.PublicURL), log: opts.Logger, now: opts.Now,
		clients: map[string]*hub.OAuthClient{}, grants: map[string]*hub.OAuthGrant{},
		access: map[[32]byte]*hub.OAuthGrant{}, refresh: map[[32]byte]*hub.OAuthGrant{}, rotated: map[[32]byte]string{},
		saved: map[string]time.Time{}, requests: map[string]*request{}, codes: map[[32]byte]*code{},
	}
	clients, grants, err := st.LoadOAuth(ctx)
	if err != nil {
		return nil, err
	}
	for i := range clients {
		s.clients[clients[i].ID] = &clients[i]
	}
	for i := range grants {
		s.index(&grants[i])
	}
	return s, nil
}

func (s *Service) index(g *hub.OAuthGrant) {
	if len(g.AccessHash) != sha256.Size || len(g.RefreshHash) != sha256.Size {
		// A damaged record (the store, or another node's copy): no token
		// can match it, so it is left out rather than crash the hub.
		s.log.Warn("oauth: a grant with malformed token hashes is ignored", "grant", g.ID, "client", g.ClientID)
		return
	}
	s.grants[g.ID] = g
	s.access[[32]byte(g.AccessHash)] = g
	s.refresh[[32]byte(g.RefreshHash)] = g
	s.saved[g.ID] = g.LastUsed
	for _, h := range g.Rotated {
		if len(h) == sha256.Size {
			s.rotated[[32]byte(h)] = g.ID
		}
	}
}

func (s *Service) unindex(g *hub.OAuthGrant) {
	delete(s.grants, g.ID)
	delete(s.access, [32]byte(g.AccessHash))
	delete(s.refresh, [32]byte(g.RefreshHash))
	delete(s.saved, g.ID)
	for _, h := range g.Rotated {
		if len(h) == sha256.Size && s.rotated[[32]byte(h)] == g.ID {
			delete(s.rotated, [32]byte(h))
		}
	}
}

// AccessToken reports whether token is a live access token (for /mcp),
// noting its use, and says whom it acts for: the person who approved the
// client ("": the admin) and the client's name.
func (s *Service) AccessToken(ctx context.Context, token string) (user, client string, ok bool) {
	h := sha256.Sum256([]byte(token))
	now := s.now()
	s.mu.Lock()
	g, ok := s.access[h]
	if !ok || !now.Before(g.AccessExpires) {
		s.mu.Unlock()
		return "", "", false
	}
	user, client = g.User, g.ClientID
	if c := s.clients[g.ClientID]; c != nil && c.Name != "" {
		client = c.Name
	}
	g.LastUsed = now
	var save *hub.OAuthGrant
	if now.Sub(s.saved[g.ID]) >= lastUsedEvery {
		s.saved[g.ID] = now
		c := *g
		save = &c
	}
	s.mu.Unlock()
	if save != nil {
		if err := s.store.SaveOAuthGrant(ctx, *save); err != nil {
			s.log.Warn("could not record the use of an OAuth grant", "client", save.ClientID, "err", err)
		}
	}
	return user, client, true
}

// The admin's views of waiting authorizations and registered clients are
// the hub's vocabulary (hub.OAuth…), so that the API serves them without
// importing this package.
type (
	Pending    = hub.OAuthPending
	ClientView = hub.OAuthClientView
	GrantView  = hub.OAuthGrantView
)

// Pending lists the authorizations waiting for a person, oldest first.
func (s *Service) Pending() []Pending {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expire(now)
	out := []Pending{}
	for _, r := range s.requests {
		if r.decided == "" {
			out = append(out, s.view(r))
		}
	}
	slices.SortFunc(out, func(a, b Pending) int { return a.Created.Compare(b.Created) })
	return out
}

func (s *Service) view(r *request) Pending {
	name := ""
	if c := s.clients[r.ClientID]; c != nil {
		name = c.Name
	}
	return Pending{ID: r.ID, ClientID: r.ClientID, ClientName: name, Redirect: origin(r.RedirectURI),
		Address: r.Address, Created: r.Created, Expires: r.Created.Add(RequestTTL)}
}

// expire forgets requests and codes past their time. Callers hold mu.
func (s *Service) expire(now time.Time) {
	for id, r := range s.requests {
		if !now.Before(r.Created.Add(RequestTTL)) {
			delete(s.requests, id)
		}
	}
	for h, c := range s.codes {
		if !now.Before(c.expires) {
			delete(s.codes, h)
		}
	}
}

// Decide approves or denies a waiting authorization, as user (the person
// deciding; "" for the admin). An approval makes an authorization code the
// client's browser is sent back with; the client then acts for user.
func (s *Service) Decide(id string, approve bool, user string) (Pending, error) {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expire(now)
	r := s.requests[id]
	if r == nil {
		return Pending{}, hub.Errorf(hub.ENOTFOUND, "no authorization %q is waiting (it expires %s after the client asked; GET /api/oauth/requests lists the waiting ones)", id, RequestTTL)
	}
	if r.decided != "" {
		return Pending{}, hub.Errorf(hub.ECONFLICT, "authorization %q was already %s", id, r.decided)
	}
	if s.clients[r.ClientID] == nil {
		return Pending{}, hub.Errorf(hub.ENOTFOUND, "the client of authorization %q was revoked", id)
	}
	if !approve {
		r.decided = "denied"
		r.redirect = withQuery(r.RedirectURI, "error", "access_denied", "error_description", "a person at the hub denied this request", "state", r.State)
		return s.view(r), nil
	}
	c, h := newSecret("xzh_ac_")
	s.codes[h] = &code{clientID: r.ClientID, redirectURI: r.RedirectURI, challenge: r.Challenge, user: user, expires: now.Add(CodeTTL)}
	r.decided = "approved"
	r.redirect = withQuery(r.RedirectURI, "code", c, "state", r.State, "iss", s.issuerOf(r))
	return s.view(r), nil
}

// issuerOf is the issuer a request was made at.
func (s *Service) issuerOf(r *request) string { return r.Resource[:len(r.Resource)-len("/mcp")] }

// Clients lists the registered clients, those with grants first, then by
// registration.
func (s *Service) Clients() []ClientView {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []ClientView{}
	for _, c := range s.clients {
		v := ClientView{ID: c.ID, Name: c.Name, Redirects: c.RedirectURIs, Registered: c.Registered, Address: c.Address, Grants: []GrantView{}}
		for _, g := range s.grants {
			if g.ClientID == c.ID {
				gv := GrantView{User: g.User, Approved: g.Approved, AccessExpires: g.AccessExpires, RefreshExpires: g.RefreshExpires}
				if !g.LastUsed.IsZero() {
					t := g.LastUsed
					gv.LastUsed = &t
				}
				v.Grants = append(v.Grants, gv)
			}
		}
		slices.SortFunc(v.Grants, func(a, b GrantView) int { return a.Approved.Compare(b.Approved) })
		out = append(out, v)
	}
	slices.SortFunc(out, func(a, b ClientView) int {
		if (len(a.Grants) > 0) != (len(b.Grants) > 0) {
			if len(a.Grants) > 0 {
				return -1
			}
			return 1
		}
		return a.Registered.Compare(b.Registered)
	})
	return out
}

// Revoke forgets a client with all its grants: its tokens stop working at
// once, and it has to register and be approved again.
func (s *Service) Revoke(ctx context.Context, clientID string) error {
	s.mu.Lock()
	if s.clients[clientID] == nil {
		s.mu.Unlock()
		return hub.Errorf(hub.ENOTFOUND, "no OAuth client %q is registered (GET /api/oauth/clients lists them)", clientID)
	}
	s.dropClient(clientID)
	s.mu.Unlock()
	return s.store.DeleteOAuthClient(ctx, clientID)
}

// RevokeUser ends user's grants of a client (its tokens stop working at
// once); the client stays registered, with other people's grants. A client
// without a grant of user is, to user, unknown.
func (s *Service) RevokeUser(ctx context.Context, clientID, user string) error {
	s.mu.Lock()
	var drop []string
	for _, g := range s.grants {
		if g.ClientID == clientID && g.User == user {
			s.unindex(g)
			drop = append(drop, g.ID)
		}
	}
	s.mu.Unlock()
	if len(drop) == 0 {
		return hub.Errorf(hub.ENOTFOUND, "no OAuth client %q is registered (GET /api/oauth/clients lists them)", clientID)
	}
	for _, id := range drop {
		if err := s.store.DeleteOAuthGrant(ctx, id); err != nil {
			return err
		}
	}
	return nil
}

// ApplyClient brings in a client another hub node of a cluster
// registered or changed, or removed (c nil: with its grants). The store
// is the cluster's business: nothing is written.
func (s *Service) ApplyClient(id string, c *hub.OAuthClient) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c == nil {
		if s.clients[id] != nil {
			s.dropClient(id)
		}
		return
	}
	cc := *c
	s.clients[id] = &cc
}

// ApplyGrant brings in a grant another hub node issued, rotated or
// removed (g nil).
func (s *Service) ApplyGrant(id string, g *hub.OAuthGrant) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if old := s.grants[id]; old != nil {
		s.unindex(old)
	}
	if g != nil {
		gg := *g
		s.index(&gg)
	}
}

// dropClient forgets a client, its grants, codes and requests. Callers
// hold mu.
func (s *Service) dropClient(id string) {
	delete(s.clients, id)
	for _, g := range s.grants {
		if g.ClientID == id {
			s.unindex(g)
		}
	}
	for h, c := range s.codes {
		if c.clientID == id {
			delete(s.codes, h)
		}
	}
	for rid, r := range s.requests {
		if r.ClientID == id {
			delete(s.requests, rid)
		}
	}
}

// ResourceMetadataURL is where a client finds out how to get a token for
// /mcp: the value of the resource_metadata parameter of /mcp's 401.
func (s *Service) ResourceMetadataURL(r *http.Request) string {
	return s.baseURL(r) + "/.well-known/oauth-protected-resource/mcp"
}

func (s *Service) baseURL(r *http.Request) string {
	if s.base != "" {
		return s.base
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// newSecret returns a random token with prefix and its SHA-256 hash.
func newSecret(prefix string) (string, [32]byte) {
	b := make([]byte, 32)
	rand.Read(b) // never fails (crypto/rand)
	tok := prefix + base64.RawURLEncoding.EncodeToString(b)
	return tok, sha256.Sum256([]byte(tok))
}

func newID(prefix string) string {
	b := make([]byte, 16)
	rand.Read(b)
	return prefix + base64.RawURLEncoding.EncodeToString(b)
}

func trimSlash(s string) string {
	for len(s) > 0 && s[len(s)-1] == '/' {
		s = s[:len(s)-1]
	}
	return s
}

var errNoClient = errors.New("unknown client")
