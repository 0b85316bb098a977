package accounts

import "github.com/xiaozhi-hub/hub"

// The Apply methods bring another cluster node's changes into memory (the
// cluster writes them to this node's store itself). nil means deleted.

// ApplyUser sets or removes user name.
func (s *Service) ApplyUser(name string, u *hub.User) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if u == nil {
		delete(s.users, name)
		for id, t := range s.tokens {
			if t.User == name {
				s.dropTokenLocked(id)
			}
		}
	} else {
		c := *u
		s.users[name] = &c
	}
	s.changedLocked()
}

// ApplyHome sets or removes home id.
func (s *Service) ApplyHome(id string, h *hub.Home) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if h == nil {
		delete(s.homes, id)
	} else {
		c := cloneHome(h)
		s.homes[id] = &c
	}
	s.reindexLocked()
	s.changedLocked()
}

// ApplyToken sets or removes token id.
func (s *Service) ApplyToken(id string, t *hub.UserToken) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dropTokenLocked(id)
	if t != nil {
		c := *t
		s.putTokenLocked(&c)
	}
	s.changedLocked()
}
