package accounts

import (
	"context"
	"maps"
	"slices"
	"strings"

	"github.com/xiaozhi-hub/hub"
)

// CreateHome makes a home with p's user as its owner.
func (s *Service) CreateHome(ctx context.Context, p *hub.Principal, name string) (hub.HomeView, error) {
	name = strings.TrimSpace(name)
	if err := checkName("home", name, false); err != nil {
		return hub.HomeView{}, err
	}
	if p.User == "" {
		return hub.HomeView{}, hub.Errorf(hub.EFORBIDDEN, "a home is made by a user, who becomes its owner: log in as a user (the admin token is no user; POST /api/users makes one)")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.users[p.User]; !ok {
		return hub.HomeView{}, hub.Errorf(hub.EUNAUTHORIZED, "the user %q no longer exists", p.User)
	}
	owned := 0
	for _, r := range s.memberOf[p.User] {
		if r == hub.RoleOwner {
			owned++
		}
	}
	if owned >= MaxHomesOwned {
		return hub.HomeView{}, hub.Errorf(hub.EINVALID, "a user owns at most %d homes", MaxHomesOwned)
	}
	h := hub.Home{ID: newID(6), Name: name, Created: s.opts.Now().UTC(), Members: map[string]hub.Role{p.User: hub.RoleOwner}}
	if err := s.store.SaveHome(ctx, h); err != nil {
		return hub.HomeView{}, err
	}
	s.homes[h.ID] = &h
	s.reindexLocked()
	s.changedLocked()
	return s.viewLocked(&h, hub.RoleOwner, true), nil
}

// Homes lists the homes p is in, with p's role (every home for the admin).
func (s *Service) Homes(p *hub.Principal) []hub.HomeView {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []hub.HomeView
	for id, h := range s.homes {
		if p.Admin {
			out = append(out, s.viewLocked(h, "", true))
		} else if r, ok := p.Homes[id]; ok && s.memberOf[p.User][id] != "" {
			out = append(out, s.viewLocked(h, r, r == hub.RoleOwner))
		}
	}
	slices.SortFunc(out, func(a, b hub.HomeView) int {
		return strings.Compare(a.Name+"\x00"+a.ID, b.Name+"\x00"+b.ID)
	})
	if out == nil {
		out = []hub.HomeView{}
	}
	return out
}

// Home returns the home id as p sees it: ENOTFOUND when p is not in it.
func (s *Service) Home(p *hub.Principal, id string) (hub.HomeView, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	h, err := s.homeLocked(p, id)
	if err != nil {
		return hub.HomeView{}, err
	}
	r := p.RoleIn(id)
	return s.viewLocked(h, r, r != hub.RoleGuest), nil
}

// Exists reports whether a home id exists.
func (s *Service) Exists(id string) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	_, ok := s.homes[id]
	return ok
}

func (s *Service) homeLocked(p *hub.Principal, id string) (*hub.Home, error) {
	h, ok := s.homes[id]
	if !ok || (!p.Admin && s.memberOf[p.User][id] == "") {
		return nil, hub.Errorf(hub.ENOTFOUND, "home %q is not one of yours (GET /api/homes lists them)", id)
	}
	return h, nil
}

func (s *Service) viewLocked(h *hub.Home, role hub.Role, members bool) hub.HomeView {
	v := hub.HomeView{ID: h.ID, Name: h.Name, Role: role, Created: h.Created}
	if members {
		v.Members = make([]hub.HomeMember, 0, len(h.Members))
		for u, r := range h.Members {
			v.Members = append(v.Members, hub.HomeMember{User: u, Role: r})
		}
		slices.SortFunc(v.Members, func(a, b hub.HomeMember) int { return strings.Compare(a.User, b.User) })
	}
	return v
}

// requireRoleLocked checks that p has at least role min in home id.
func (s *Service) requireRoleLocked(p *hub.Principal, id string, min hub.Role, doing string) (*hub.Home, error) {
	h, err := s.homeLocked(p, id)
	if err != nil {
		return nil, err
	}
	if !p.Admin && !s.memberOf[p.User][id].AtLeast(min) {
		return nil, hub.Errorf(hub.EFORBIDDEN, "only an %s of home %q may %s (you are a %s)", min, h.Name, doing, s.memberOf[p.User][id])
	}
	return h, nil
}

// RequireRole checks that p has at least role min in home id: ENOTFOUND
// when p is not in it, EFORBIDDEN (saying what doing needs) when p's role
// is lower.
func (s *Service) RequireRole(p *hub.Principal, id string, min hub.Role, doing string) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	_, err := s.requireRoleLocked(p, id, min, doing)
	return err
}

// SetMember adds user to home id with role, or changes their role. Only
// an owner (or the admin) may; a home keeps at least one owner.
func (s *Service) SetMember(ctx context.Context, p *hub.Principal, id, user string, role hub.Role) error {
	if !role.Valid() {
		return hub.Errorf(hub.EINVALID, "role %q is not one of owner, member, guest", role)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	h, err := s.requireRoleLocked(p, id, hub.RoleOwner, "add or change members")
	if err != nil {
		return err
	}
	if _, ok := s.users[user]; !ok {
		return hub.Errorf(hub.ENOTFOUND, "no user is named %q (the admin makes users: POST /api/users)", user)
	}
	if _, ok := h.Members[user]; !ok && len(h.Members) >= MaxMembers {
		return hub.Errorf(hub.EINVALID, "a home has at most %d members", MaxMembers)
	}
	next := cloneHome(h)
	next.Members[user] = role
	if !hasOwner(next) {
		return hub.Errorf(hub.ECONFLICT, "home %q needs an owner: make another member owner first", h.Name)
	}
	return s.saveHomeLocked(ctx, next)
}

// RemoveMember takes user out of home id, at once. An owner (or the
// admin) may remove anyone; anyone may leave. A home keeps at least one
// owner.
func (s *Service) RemoveMember(ctx context.Context, p *hub.Principal, id, user string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var h *hub.Home
	var err error
	if !p.Admin && user == p.User {
		h, err = s.homeLocked(p, id)
	} else {
		h, err = s.requireRoleLocked(p, id, hub.RoleOwner, "remove members")
	}
	if err != nil {
		return err
	}
	if _, ok := h.Members[user]; !ok {
		return hub.Errorf(hub.ENOTFOUND, "%q is not a member of home %q", user, h.Name)
	}
	next := cloneHome(h)
	delete(next.Members, user)
	if !hasOwner(next) && len(next.Members) > 0 {
		return hub.Errorf(hub.ECONFLICT, "home %q needs an owner: make another member owner first", h.Name)
	}
	return s.saveHomeLocked(ctx, next)
}

// RenameHome changes a home's name (owner or admin).
func (s *Service) RenameHome(ctx context.Context, p *hub.Principal, id, name string) (hub.HomeView, error) {
	name = strings.TrimSpace(name)
	if err := checkName("home", name, false); err != nil {
		return hub.HomeView{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	h, err := s.requireRoleLocked(p, id, hub.RoleOwner, "rename it")
	if err != nil {
		return hub.HomeView{}, err
	}
	next := cloneHome(h)
	next.Name = name
	if err := s.saveHomeLocked(ctx, next); err != nil {
		return hub.HomeView{}, err
	}
	return s.viewLocked(&next, p.RoleIn(id), true), nil
}

// DeleteHome removes home id (owner or admin). The caller moves or
// removes its devices first (the registry's, not this package's).
func (s *Service) DeleteHome(ctx context.Context, p *hub.Principal, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.requireRoleLocked(p, id, hub.RoleOwner, "delete it"); err != nil {
		return err
	}
	if err := s.store.DeleteHome(ctx, id); err != nil {
		return err
	}
	delete(s.homes, id)
	s.reindexLocked()
	s.changedLocked()
	return nil
}

func (s *Service) saveHomeLocked(ctx context.Context, h hub.Home) error {
	if err := s.store.SaveHome(ctx, h); err != nil {
		return err
	}
	s.homes[h.ID] = &h
	s.reindexLocked()
	s.changedLocked()
	return nil
}

func cloneHome(h *hub.Home) hub.Home {
	c := *h
	c.Members = maps.Clone(h.Members)
	if c.Members == nil {
		c.Members = map[string]hub.Role{}
	}
	return c
}

func hasOwner(h hub.Home) bool {
	for _, r := range h.Members {
		if r == hub.RoleOwner {
			return true
		}
	}
	return false
}
