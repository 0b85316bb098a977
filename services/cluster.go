package services

import (
	"bytes"
	"crypto/sha256"

	"github.com/xiaozhi-hub/hub"
)

// ApplyService takes another cluster node's change to an endpoint service
// (s nil: deleted), for cluster.Node.ServeServices. A service this node
// holds the connection of keeps its own tool list (it is the one that
// stores it); one whose token changed (deleted and made again elsewhere)
// loses its connection, as does a deleted one. A configured server of this
// node keeps its name: the change is not taken (false).
func (m *Manager) ApplyService(name string, s *hub.Service) bool {
	m.mu.Lock()
	e, ok := m.entries[name]
	if ok && e.svc.Kind == hub.ServiceConfigured {
		m.mu.Unlock()
		return false
	}
	if m.closed {
		m.mu.Unlock()
		return true
	}
	var closeLink func(string)
	why := "the service was deleted: its token is revoked"
	switch {
	case ok && s != nil && bytes.Equal(e.svc.TokenHash, s.TokenHash):
		e.svc.Home = s.Home
		if e.link == nil {
			e.svc.Tools = m.bound(s.Tools)
		}
	default:
		if ok {
			if len(e.svc.TokenHash) == sha256.Size {
				delete(m.byHash, [sha256.Size]byte(e.svc.TokenHash))
			}
			delete(m.entries, name)
			closeLink, e.link, e.closeLink = e.closeLink, nil, nil
		}
		if s != nil {
			sv := *s
			sv.Tools = m.bound(s.Tools)
			m.entries[name] = &entry{svc: sv}
			if len(sv.TokenHash) == sha256.Size {
				m.byHash[[sha256.Size]byte(sv.TokenHash)] = name
			}
			why = "the service was made again with a new token"
		}
	}
	m.bumpLocked()
	m.mu.Unlock()
	if closeLink != nil {
		closeLink(why)
	}
	return true
}
