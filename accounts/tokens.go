package accounts

import (
	"context"
	"slices"
	"strings"

	"github.com/xiaozhi-hub/hub"
)

// CreateToken makes a named personal token for user, for scripts: its
// secret is returned once and kept only as a hash; it lasts until revoked.
func (s *Service) CreateToken(ctx context.Context, user, name string) (string, hub.TokenView, error) {
	name = strings.TrimSpace(name)
	if err := checkName("token", name, false); err != nil {
		return "", hub.TokenView{}, err
	}
	if !s.exists(user) {
		return "", hub.TokenView{}, hub.Errorf(hub.EFORBIDDEN, "personal tokens belong to a user: log in as one (the admin token is no user)")
	}
	secret, hash := newSecret()
	t := hub.UserToken{ID: newID(8), User: user, Kind: hub.TokenPersonal, Name: name, Hash: hash, Created: s.opts.Now().UTC()}
	if err := s.addToken(ctx, &t, MaxPersonalTokens); err != nil {
		return "", hub.TokenView{}, err
	}
	return secret, tokenView(&t), nil
}

// addToken stores t. Logins past limit go oldest first; personal tokens
// past it are refused.
func (s *Service) addToken(ctx context.Context, t *hub.UserToken, limit int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.users[t.User]; !ok {
		return hub.Errorf(hub.EUNAUTHORIZED, "the user %q no longer exists", t.User)
	}
	var same []*hub.UserToken
	for _, o := range s.tokens {
		if o.User == t.User && o.Kind == t.Kind {
			if t.Kind == hub.TokenPersonal && o.Name == t.Name {
				return hub.Errorf(hub.ECONFLICT, "you have a token named %q already; revoke it or choose another name", t.Name)
			}
			same = append(same, o)
		}
	}
	if len(same) >= limit {
		if t.Kind == hub.TokenPersonal {
			return hub.Errorf(hub.EINVALID, "a user has at most %d personal tokens; revoke one first", limit)
		}
		slices.SortFunc(same, func(a, b *hub.UserToken) int { return a.Created.Compare(b.Created) })
		for _, o := range same[:len(same)-limit+1] {
			if err := s.store.DeleteToken(ctx, o.ID); err != nil {
				return err
			}
			s.dropTokenLocked(o.ID)
		}
	}
	if err := s.store.SaveToken(ctx, *t); err != nil {
		return err
	}
	s.putTokenLocked(t)
	s.changedLocked()
	return nil
}

// Tokens lists user's logins and personal tokens, newest first.
func (s *Service) Tokens(user string) []hub.TokenView {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := s.tokenViewsLocked(user)
	if out == nil {
		out = []hub.TokenView{}
	}
	return out
}

// RevokeToken ends token id of user at once (user "" is the admin, who
// may revoke anyone's).
func (s *Service) RevokeToken(ctx context.Context, user, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tokens[id]
	if !ok || (user != "" && t.User != user) {
		return hub.Errorf(hub.ENOTFOUND, "no token %q of yours (GET /api/tokens lists them)", id)
	}
	if err := s.store.DeleteToken(ctx, id); err != nil {
		return err
	}
	s.dropTokenLocked(id)
	s.changedLocked()
	return nil
}
