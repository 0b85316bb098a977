package accounts

import (
	"context"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/internal/ratelimit"
)

// AddUser creates a user: EINVALID for a bad name or a password of fewer
// than MinPassword characters, ECONFLICT for a name taken.
func (s *Service) AddUser(ctx context.Context, name, password string) (hub.UserView, error) {
	name = strings.TrimSpace(name)
	if err := checkName("user", name, true); err != nil {
		return hub.UserView{}, err
	}
	if err := checkPassword(password); err != nil {
		return hub.UserView{}, err
	}
	if s.exists(name) {
		return hub.UserView{}, hub.Errorf(hub.ECONFLICT, "a user named %q already exists", name)
	}
	var phc string
	var herr error
	if err := s.hash.do(ctx, func() { phc, herr = hashPassword(password) }); err != nil {
		return hub.UserView{}, err
	}
	if herr != nil {
		return hub.UserView{}, herr
	}
	u := hub.User{Name: name, PasswordHash: phc, Created: s.opts.Now().UTC()}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.users[name]; ok {
		return hub.UserView{}, hub.Errorf(hub.ECONFLICT, "a user named %q already exists", name)
	}
	if len(s.users) >= MaxUsers {
		return hub.UserView{}, hub.Errorf(hub.EINVALID, "the hub has its %d users already; remove one first", MaxUsers)
	}
	if err := s.store.SaveUser(ctx, u); err != nil {
		return hub.UserView{}, err
	}
	s.users[name] = &u
	s.changedLocked()
	return hub.UserView{Name: name, Created: u.Created, Homes: []hub.HomeView{}}, nil
}

func (s *Service) exists(name string) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	_, ok := s.users[name]
	return ok
}

func checkPassword(pw string) error {
	if utf8.RuneCountInString(pw) < MinPassword {
		return hub.Errorf(hub.EINVALID, "a password needs at least %d characters", MinPassword)
	}
	if len(pw) > MaxPassword {
		return hub.Errorf(hub.EINVALID, "a password may have at most %d bytes", MaxPassword)
	}
	return nil
}

// SetPassword changes a user's password and ends their logins (personal
// tokens stay: they were made on purpose and are revoked on purpose).
func (s *Service) SetPassword(ctx context.Context, name, password string) error {
	return s.setPassword(ctx, name, password, "")
}

// ChangePassword is a user changing their own password: current must be
// their password (a wrong one counts as a failed login from address, and
// is EFORBIDDEN); their logins end, except the one with id keep (the one
// they are using).
func (s *Service) ChangePassword(ctx context.Context, name, current, password, keep, address string) error {
	if err := checkPassword(password); err != nil {
		return err
	}
	good, err := s.verify(ctx, name, current, address)
	if err != nil {
		return err
	}
	if !good {
		return hub.Errorf(hub.EFORBIDDEN, "the current password is wrong")
	}
	return s.setPassword(ctx, name, password, keep)
}

func (s *Service) setPassword(ctx context.Context, name, password, keep string) error {
	if err := checkPassword(password); err != nil {
		return err
	}
	var phc string
	var herr error
	if err := s.hash.do(ctx, func() { phc, herr = hashPassword(password) }); err != nil {
		return err
	}
	if herr != nil {
		return herr
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	u, ok := s.users[name]
	if !ok {
		return hub.Errorf(hub.ENOTFOUND, "no user is named %q", name)
	}
	next := *u
	next.PasswordHash = phc
	if err := s.store.SaveUser(ctx, next); err != nil {
		return err
	}
	*u = next
	for id, t := range s.tokens {
		if t.User == name && t.Kind == hub.TokenLogin && id != keep {
			if err := s.store.DeleteToken(ctx, id); err != nil {
				return err
			}
			s.dropTokenLocked(id)
		}
	}
	s.changedLocked()
	return nil
}

// DeleteUser removes a user, their tokens and their places in homes, at
// once: their next request, open stream or /mcp session is refused. A
// home they were the last owner of keeps its devices and other members;
// the admin can name a new owner.
func (s *Service) DeleteUser(ctx context.Context, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.users[name]; !ok {
		return hub.Errorf(hub.ENOTFOUND, "no user is named %q", name)
	}
	for id := range s.memberOf[name] {
		h := cloneHome(s.homes[id])
		delete(h.Members, name)
		if err := s.store.SaveHome(ctx, h); err != nil {
			return err
		}
		s.homes[id] = &h
	}
	if err := s.store.DeleteUser(ctx, name); err != nil {
		return err
	}
	delete(s.users, name)
	for id, t := range s.tokens {
		if t.User == name {
			s.dropTokenLocked(id)
		}
	}
	s.reindexLocked()
	s.changedLocked()
	return nil
}

// Users lists every user with their homes (for the admin).
func (s *Service) Users() []hub.UserView {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]hub.UserView, 0, len(s.users))
	for _, u := range s.users {
		v := hub.UserView{Name: u.Name, Created: u.Created, Homes: []hub.HomeView{}}
		for id, r := range s.memberOf[u.Name] {
			h := s.homes[id]
			v.Homes = append(v.Homes, hub.HomeView{ID: id, Name: h.Name, Role: r, Created: h.Created})
		}
		slices.SortFunc(v.Homes, func(a, b hub.HomeView) int { return strings.Compare(a.Name, b.Name) })
		out = append(out, v)
	}
	slices.SortFunc(out, func(a, b hub.UserView) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Login checks a name and password and returns a new login token (its
// secret, shown once). A wrong password and an unknown name get the same
// EUNAUTHORIZED answer in the same time; past the failure limits (per
// address, per name) the answer is ETOOMANY with RetryAfter, without
// checking the password at all.
func (s *Service) Login(ctx context.Context, name, password, address string) (string, hub.TokenView, error) {
	good, err := s.verify(ctx, name, password, address)
	if err != nil {
		return "", hub.TokenView{}, err
	}
	if !good {
		return "", hub.TokenView{}, hub.Errorf(hub.EUNAUTHORIZED, "wrong name or password")
	}
	now := s.opts.Now()
	secret, hash := newSecret()
	t := hub.UserToken{ID: newID(8), User: name, Kind: hub.TokenLogin, Hash: hash,
		Created: now.UTC(), Expires: now.Add(s.opts.LoginTTL).UTC()}
	if err := s.addToken(ctx, &t, MaxLogins); err != nil {
		return "", hub.TokenView{}, err
	}
	return secret, tokenView(&t), nil
}

// verify checks name's password, within the failure limits: a wrong
// password and an unknown name take the same time and count as failures
// (per address and per name); past the limits the answer is ETOOMANY with
// RetryAfter, without checking the password at all.
func (s *Service) verify(ctx context.Context, name, password, address string) (bool, error) {
	now := s.opts.Now()
	if wait := s.loginWait(name, address, now); wait > 0 {
		e := hub.Errorf(hub.ETOOMANY, "too many failed logins from this address or for this name; try again in %d s", int(wait/time.Second)+1)
		e.RetryAfter = wait
		return false, e
	}
	s.mu.RLock()
	u, ok := s.users[name]
	phc := decoy()
	if ok {
		phc = u.PasswordHash
	}
	s.mu.RUnlock()
	var good bool
	if err := s.hash.do(ctx, func() { good = verifyPassword(phc, password) }); err != nil {
		return false, err
	}
	if !ok || !good || len(password) > MaxPassword {
		s.loginFailed(name, address, now)
		return false, nil
	}
	return true, nil
}

// loginWait is how long logins for name from address must wait (0: none).
func (s *Service) loginWait(name, address string, now time.Time) time.Duration {
	s.failMu.Lock()
	defer s.failMu.Unlock()
	var wait time.Duration
	for _, k := range []struct {
		keyed *ratelimit.Keyed[struct{}]
		key   string
	}{{s.byAddress, address}, {s.byName, strings.ToLower(name)}} {
		if e := k.keyed.Peek(k.key); e != nil {
			if w := ratelimit.Wait(&e.Limiter, now); w > 0 {
				wait = max(wait, w, time.Second)
			}
		}
	}
	return wait
}

func (s *Service) loginFailed(name, address string, now time.Time) {
	s.failMu.Lock()
	defer s.failMu.Unlock()
	ratelimit.Take(&s.byAddress.Get(address, now).Limiter, now)
	ratelimit.Take(&s.byName.Get(strings.ToLower(name), now).Limiter, now)
}

// Logout ends the login (or revokes the personal token) secret is.
func (s *Service) Logout(ctx context.Context, secret string) error {
	p, err := s.Resolve(secret)
	if err != nil {
		return err
	}
	return s.RevokeToken(ctx, p.User, p.Credential)
}
