package services

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/xiaozhi-hub/hub"
)

// EndpointPath is where programs connect, with ?token=: the WebSocket
// endpoint of every service (Manager.ServeHTTP).
const EndpointPath = "/services/ws"

// tokenPrefix marks a service's token, so that a leaked one is recognised.
const tokenPrefix = "xzs_"

var validName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,31}$`)

// CheckName says what is wrong with a service name, in words for people.
func CheckName(name string) error {
	if !validName.MatchString(name) {
		return hub.Errorf(hub.EINVALID, "a service name is 1 to 32 lower-case letters, digits, '-' or '_', starting with a letter or digit, e.g. \"calc\"; not %q", hub.Truncate([]byte(name), 40))
	}
	return nil
}

// CreateService makes an endpoint service named name for home ("" = the
// hub's) and returns it with its URL, which holds the token: the only time
// the token is shown (the hub keeps its SHA-256). base is the hub's base
// URL as the caller reached it (http://host:port), unless Options.PublicURL
// is set. The admin (or p nil, the hub) creates services for any home or
// for everyone; an owner of a home, for that home (mayManage). A home
// holds at most MaxHomeServices.
func (m *Manager) CreateService(ctx context.Context, name, home, base string) (hub.ServiceView, error) {
	p := hub.PrincipalFrom(ctx)
	if err := CheckName(name); err != nil {
		return hub.ServiceView{}, err
	}
	if home != "" && (m.opts.HomeExists == nil || !m.opts.HomeExists(home) || !sees(p, home)) {
		return hub.ServiceView{}, hub.Errorf(hub.ENOTFOUND, "home %q is not known to the hub (GET /api/homes lists them)", home)
	}
	if err := mayManage(p, home, "creates"); err != nil {
		return hub.ServiceView{}, err
	}
	token, hash := newToken()
	svc := hub.Service{Name: name, Kind: hub.ServiceEndpoint, Home: home, TokenHash: hash[:], Created: time.Now().UTC()}
	m.mu.Lock()
	if other, taken := m.entries[name]; taken {
		m.mu.Unlock()
		if !sees(p, other.svc.Home) { // one namespace: say only that the name is taken
			return hub.ServiceView{}, hub.Errorf(hub.ECONFLICT, "the service name %q is taken on this hub; choose another", name)
		}
		return hub.ServiceView{}, hub.Errorf(hub.ECONFLICT, "a service named %q exists; choose another name or delete it first (DELETE /api/services/%s)", name, name)
	}
	if home != "" && m.countLocked(home) >= MaxHomeServices {
		m.mu.Unlock()
		return hub.ServiceView{}, hub.Errorf(hub.ECONFLICT, "home %q has %d services, the most a home may have; delete one first", home, MaxHomeServices)
	}
	if m.closed {
		m.mu.Unlock()
		return hub.ServiceView{}, hub.Errorf(hub.EUNAVAILABLE, "the hub is shutting down")
	}
	e := &entry{svc: svc}
	m.entries[name] = e
	m.byHash[hash] = name
	m.bumpLocked()
	m.mu.Unlock()
	if err := m.opts.Store.SaveService(ctx, svc); err != nil {
		m.mu.Lock()
		if m.entries[name] == e {
			delete(m.entries, name)
			delete(m.byHash, hash)
			m.bumpLocked()
		}
		m.mu.Unlock()
		return hub.ServiceView{}, err
	}
	m.mu.Lock() // a cluster node may apply the service's shared record meanwhile
	v := e.view()
	m.mu.Unlock()
	if m.opts.PublicURL != "" {
		base = m.opts.PublicURL
	}
	v.URL = EndpointURL(base, token)
	m.log.Info("service created", "service", name, "home", home)
	return v, nil
}

// MaxHomeServices bounds the services of one home, whoever creates them.
const MaxHomeServices = 32

// countLocked is the number of services of home (m.mu held).
func (m *Manager) countLocked(home string) int {
	n := 0
	for _, e := range m.entries {
		if e.svc.Home == home {
			n++
		}
	}
	return n
}

// mayManage says whether p may create or delete (doing) the services of
// home, which p sees: the admin (or p nil, the hub) any; an owner of a
// home, that home's; anyone else is EFORBIDDEN, saying why.
func mayManage(p *hub.Principal, home, doing string) error {
	switch {
	case p == nil || p.Admin:
		return nil
	case home == "":
		return hub.Errorf(hub.EFORBIDDEN, "only the admin %s the hub's own services (those of no home); an owner of a home %s that home's, with {\"home\":\"<id>\"}", doing, doing)
	case p.RoleIn(home) != hub.RoleOwner:
		return hub.Errorf(hub.EFORBIDDEN, "only an owner of home %q (or the admin) %s its services; you are %s there", home, doing, article(p.RoleIn(home)))
	}
	return nil
}

// article is a role with its article: "a member", "a guest".
func article(r hub.Role) string {
	if r == "" {
		return "not a member"
	}
	return "a " + string(r)
}

// EndpointURL is the URL a program connects to: base (http or https, a
// path prefix kept) as ws or wss, EndpointPath and the token.
func EndpointURL(base, token string) string {
	base = strings.TrimRight(base, "/")
	switch {
	case strings.HasPrefix(base, "https://"):
		base = "wss://" + strings.TrimPrefix(base, "https://")
	case strings.HasPrefix(base, "http://"):
		base = "ws://" + strings.TrimPrefix(base, "http://")
	}
	return base + EndpointPath + "?token=" + url.QueryEscape(token)
}

func newToken() (string, [sha256.Size]byte) {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	t := tokenPrefix + base64.RawURLEncoding.EncodeToString(b)
	return t, sha256.Sum256([]byte(t))
}

// DeleteService revokes an endpoint service: its token stops working, its
// connection is closed at once and its tools are forgotten. A configured
// server is removed from the config file instead (ECONFLICT here).
func (m *Manager) DeleteService(ctx context.Context, name string) error {
	p := hub.PrincipalFrom(ctx)
	m.mu.Lock()
	e, ok := m.entries[name]
	if !ok || !sees(p, e.svc.Home) {
		m.mu.Unlock()
		return notFound(name)
	}
	if err := mayManage(p, e.svc.Home, "deletes"); err != nil {
		m.mu.Unlock()
		return err
	}
	if e.svc.Kind == hub.ServiceConfigured {
		m.mu.Unlock()
		return hub.Errorf(hub.ECONFLICT, "service %q is configured (mcp-servers in the config file): remove it there and restart the hub", name)
	}
	delete(m.entries, name)
	if len(e.svc.TokenHash) == sha256.Size {
		delete(m.byHash, [sha256.Size]byte(e.svc.TokenHash))
	}
	closeLink := e.closeLink
	e.link, e.closeLink = nil, nil
	m.bumpLocked()
	m.mu.Unlock()
	if closeLink != nil {
		closeLink("the service was deleted: its token is revoked")
	}
	m.log.Info("service deleted", "service", name)
	return m.opts.Store.DeleteService(ctx, name)
}

// attach makes l the live link of service name (replacing, and closing,
// any earlier one) and reports whether the service still exists. e is the
// entry the connection authenticated against: a service deleted and made
// again under the same name is not reached by the old token's connection.
func (m *Manager) attach(e *entry, l link, server string, closeLink func(string)) bool {
	m.mu.Lock()
	if m.closed || m.entries[e.svc.Name] != e {
		m.mu.Unlock()
		return false
	}
	old := e.closeLink
	e.link, e.server, e.err, e.closeLink = l, server, "", closeLink
	m.bumpLocked()
	m.mu.Unlock()
	if old != nil {
		old("a newer connection of the same service replaced this one")
	}
	return true
}

// detach marks the service offline if l is still its link.
func (m *Manager) detach(e *entry, l link, why string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e.link != l {
		return
	}
	e.link, e.closeLink = nil, nil
	if e.svc.Kind == hub.ServiceConfigured {
		e.err = why
	}
	m.bumpLocked()
}

// setTools stores a service's new tool list (bounded: see bound) if it
// changed.
func (m *Manager) setTools(ctx context.Context, e *entry, tools []hub.Tool) {
	tools = m.bound(tools)
	m.mu.Lock()
	if m.entries[e.svc.Name] != e || sameTools(e.svc.Tools, tools) {
		m.mu.Unlock()
		return
	}
	e.svc.Tools = tools
	m.bumpLocked()
	m.mu.Unlock()
	if err := m.opts.Store.SaveServiceTools(ctx, e.svc.Name, tools); err != nil {
		m.log.Warn("could not store a service's tools", "service", e.svc.Name, "err", err)
	}
}

// setError says why a configured server is not connected.
func (m *Manager) setError(e *entry, why string) {
	m.mu.Lock()
	if e.err != why {
		e.err = why
		m.bumpLocked()
	}
	m.mu.Unlock()
}

// byToken returns the entry of an endpoint's token.
func (m *Manager) byToken(token string) (*entry, bool) {
	h := sha256.Sum256([]byte(token))
	m.mu.Lock()
	defer m.mu.Unlock()
	name, ok := m.byHash[h]
	if !ok {
		return nil, false
	}
	e, ok := m.entries[name]
	return e, ok
}

// entry returns the entry of name for p (ENOTFOUND if p does not see it).
func (m *Manager) entry(p *hub.Principal, name string) (*entry, link, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.entries[name]
	if !ok || !sees(p, e.svc.Home) {
		return nil, nil, notFound(name)
	}
	return e, e.link, nil
}
