// Package accounts is the people of a hub: users with passwords, the homes
// they share with a role each (owner, member, guest), and the bearer
// tokens they log in with or make for scripts. It turns a presented token
// into a hub.Principal, the one answer every surface asks "who is this".
//
// Everything is held in memory (a hub has people by the dozen, not the
// million) and written through to a Store first, so that a failed write
// never leaves memory saying otherwise; in a cluster the Store is the
// cluster's, and Apply… brings the other nodes' changes in.
package accounts

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/internal/ratelimit"
	"golang.org/x/time/rate"
)

// Store keeps users, homes and tokens durably.
type Store interface {
	LoadAccounts(ctx context.Context) ([]hub.User, []hub.Home, []hub.UserToken, error)
	SaveUser(ctx context.Context, u hub.User) error
	DeleteUser(ctx context.Context, name string) error // and the user's tokens
	SaveHome(ctx context.Context, h hub.Home) error
	DeleteHome(ctx context.Context, id string) error
	SaveToken(ctx context.Context, t hub.UserToken) error
	DeleteToken(ctx context.Context, id string) error
}

// Limits.
const (
	MaxUsers          = 1000
	MaxHomesOwned     = 20 // homes one user may create
	MaxMembers        = 100
	MaxPersonalTokens = 50
	MaxLogins         = 20 // login tokens kept per user; the oldest go first
	MaxNameLen        = 64
	// TokenPrefix starts every user token, so that a leaked one is
	// recognisable (by people and by secret scanners).
	TokenPrefix = "xzu_"
)

// Options configures a Service.
type Options struct {
	Now      func() time.Time // default time.Now
	LoginTTL time.Duration    // how long a login lasts (default 30 days)
	Logger   *slog.Logger
	// LoginFailures bound failed logins: per source address (default a
	// burst of 10, then one every 10 s) and per user name (a burst of 5,
	// then one every 30 s). Past them, Login answers ETOOMANY with
	// RetryAfter, whether the name exists or not.
	AddressBurst, NameBurst int
	AddressEvery, NameEvery time.Duration
}

// Service holds the hub's people.
type Service struct {
	store Store
	opts  Options
	hash  hasher

	mu       sync.RWMutex
	users    map[string]*hub.User
	homes    map[string]*hub.Home
	tokens   map[string]*hub.UserToken // by id
	byHash   map[[32]byte]*hub.UserToken
	memberOf map[string]map[string]hub.Role // user → home → role

	gen  atomic.Uint64
	wake chan struct{} // closed at the next change; under mu

	failMu    sync.Mutex
	byAddress *ratelimit.Keyed[struct{}]
	byName    *ratelimit.Keyed[struct{}]
}

// New returns a Service over store. Call Load before using it.
func New(store Store, opts Options) *Service {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.LoginTTL <= 0 {
		opts.LoginTTL = 30 * 24 * time.Hour
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.AddressBurst <= 0 {
		opts.AddressBurst, opts.AddressEvery = 10, 10*time.Second
	}
	if opts.NameBurst <= 0 {
		opts.NameBurst, opts.NameEvery = 5, 30*time.Second
	}
	return &Service{
		store: store, opts: opts, hash: make(hasher, 2),
		users: map[string]*hub.User{}, homes: map[string]*hub.Home{}, tokens: map[string]*hub.UserToken{},
		byHash: map[[32]byte]*hub.UserToken{}, memberOf: map[string]map[string]hub.Role{},
		byAddress: ratelimit.NewKeyed[struct{}](rate.Every(opts.AddressEvery), opts.AddressBurst, 0),
		byName:    ratelimit.NewKeyed[struct{}](rate.Every(opts.NameEvery), opts.NameBurst, 0),
	}
}

// Load reads everything from the store, forgetting expired logins.
func (s *Service) Load(ctx context.Context) error {
	users, homes, tokens, err := s.store.LoadAccounts(ctx)
	if err != nil {
		return err
	}
	now := s.opts.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range users {
		s.users[users[i].Name] = &users[i]
	}
	for i := range homes {
		s.homes[homes[i].ID] = &homes[i]
	}
	var expired []string
	for i := range tokens {
		t := &tokens[i]
		if expiredAt(t, now) {
			expired = append(expired, t.ID)
			continue
		}
		s.putTokenLocked(t)
	}
	s.reindexLocked()
	for _, id := range expired {
		if err := s.store.DeleteToken(ctx, id); err != nil {
			s.opts.Logger.Warn("cannot forget an expired login", "err", err)
		}
	}
	return nil
}

// Generation changes whenever a user, home, membership or token does.
func (s *Service) Generation() uint64 { return s.gen.Load() }

// Changed returns a channel closed once Generation differs from since.
func (s *Service) Changed(since uint64) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gen.Load() != since {
		ch := make(chan struct{})
		close(ch)
		return ch
	}
	if s.wake == nil {
		s.wake = make(chan struct{})
	}
	return s.wake
}

// changedLocked counts a change and wakes those waiting for one.
func (s *Service) changedLocked() {
	s.gen.Add(1)
	if s.wake != nil {
		close(s.wake)
		s.wake = nil
	}
}

// reindexLocked rebuilds who is in which home.
func (s *Service) reindexLocked() {
	clear(s.memberOf)
	for id, h := range s.homes {
		for u, r := range h.Members {
			m := s.memberOf[u]
			if m == nil {
				m = map[string]hub.Role{}
				s.memberOf[u] = m
			}
			m[id] = r
		}
	}
}

func (s *Service) putTokenLocked(t *hub.UserToken) {
	if len(t.Hash) != sha256.Size {
		return // not one of ours: it opens nothing
	}
	s.tokens[t.ID] = t
	s.byHash[[32]byte(t.Hash)] = t
}

func (s *Service) dropTokenLocked(id string) {
	if t, ok := s.tokens[id]; ok {
		delete(s.byHash, [32]byte(t.Hash))
		delete(s.tokens, id)
	}
}

func expiredAt(t *hub.UserToken, now time.Time) bool {
	return !t.Expires.IsZero() && !now.Before(t.Expires)
}

// HasUsers reports whether any user exists.
func (s *Service) HasUsers() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.users) > 0
}

// Principal returns the principal of user acting directly ("", false if
// there is no such user): their homes and roles as they are now.
func (s *Service) Principal(user string) (*hub.Principal, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.principalLocked(user)
}

func (s *Service) principalLocked(user string) (*hub.Principal, bool) {
	if _, ok := s.users[user]; !ok {
		return nil, false
	}
	homes := make(map[string]hub.Role, len(s.memberOf[user]))
	for id, r := range s.memberOf[user] {
		homes[id] = r
	}
	return &hub.Principal{User: user, Homes: homes}, true
}

// Resolve returns the principal of a user token (a login or a personal
// token): EUNAUTHORIZED if it is not one, has expired or was revoked, or
// its user is gone.
func (s *Service) Resolve(secret string) (*hub.Principal, error) {
	if !strings.HasPrefix(secret, TokenPrefix) || len(secret) > 128 {
		return nil, hub.Errorf(hub.EUNAUTHORIZED, "the bearer token is not a token of this hub")
	}
	sum := sha256.Sum256([]byte(secret))
	s.mu.RLock()
	defer s.mu.RUnlock()
	t, ok := s.byHash[sum]
	if !ok {
		return nil, hub.Errorf(hub.EUNAUTHORIZED, "the token was revoked or never existed; log in again (POST /api/login)")
	}
	if expiredAt(t, s.opts.Now()) {
		return nil, hub.Errorf(hub.EUNAUTHORIZED, "the login has expired; log in again (POST /api/login)")
	}
	p, ok := s.principalLocked(t.User)
	if !ok {
		return nil, hub.Errorf(hub.EUNAUTHORIZED, "the token's user no longer exists")
	}
	p.Credential = t.ID
	if t.Kind == hub.TokenPersonal {
		p.Token = t.Name
	}
	return p, nil
}

// Recheck returns p as it is now, for a long-lived stream re-checking
// its credential after a change (Changed): the same token with its user's
// homes and roles as they are now, or EUNAUTHORIZED when the token was
// revoked or has expired or its user is gone. The admin is unchanged.
func (s *Service) Recheck(p *hub.Principal) (*hub.Principal, error) {
	if p.Admin {
		return p, nil
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	t, ok := s.tokens[p.Credential]
	if !ok || t.User != p.User || expiredAt(t, s.opts.Now()) {
		return nil, hub.Errorf(hub.EUNAUTHORIZED, "the token was revoked or has expired; log in again (POST /api/login)")
	}
	q, ok := s.principalLocked(t.User)
	if !ok {
		return nil, hub.Errorf(hub.EUNAUTHORIZED, "the token's user no longer exists")
	}
	q.Credential, q.Token, q.Client, q.Agent = p.Credential, p.Token, p.Client, p.Agent
	return q, nil
}

// newSecret returns a fresh token secret and its hash.
func newSecret() (string, []byte) {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	secret := TokenPrefix + base64.RawURLEncoding.EncodeToString(b)
	sum := sha256.Sum256([]byte(secret))
	return secret, sum[:]
}

// newID returns a random id of n bytes, in hex.
func newID(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// checkName validates a user or home name: 1 to MaxNameLen characters,
// no control characters; user names also no spaces or '/' (they appear in
// URLs and in the call history).
func checkName(what, name string, user bool) error {
	n := utf8.RuneCountInString(name)
	if n == 0 || n > MaxNameLen || !utf8.ValidString(name) {
		return hub.Errorf(hub.EINVALID, "a %s name needs 1 to %d characters", what, MaxNameLen)
	}
	for _, r := range name {
		if unicode.IsControl(r) || (user && (unicode.IsSpace(r) || strings.ContainsRune("/\\?#%:", r))) {
			return hub.Errorf(hub.EINVALID, "a %s name may not contain %q", what, r)
		}
	}
	if user && strings.EqualFold(name, "admin") {
		return hub.Errorf(hub.EINVALID, `"admin" is the operator's name in the call history; choose another user name`)
	}
	return nil
}

func (s *Service) tokenViewsLocked(user string) []hub.TokenView {
	var out []hub.TokenView
	for _, t := range s.tokens {
		if t.User == user {
			out = append(out, tokenView(t))
		}
	}
	slices.SortFunc(out, func(a, b hub.TokenView) int { return b.Created.Compare(a.Created) })
	return out
}

func tokenView(t *hub.UserToken) hub.TokenView {
	return hub.TokenView{ID: t.ID, Kind: t.Kind, Name: t.Name, Created: t.Created, Expires: t.Expires}
}
