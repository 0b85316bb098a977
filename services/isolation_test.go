package services

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/store"
)

// fakeLink answers every call with "ran".
type fakeLink struct{ calls int }

func (f *fakeLink) CallTool(context.Context, string, []byte) (hub.CallResult, error) {
	f.calls++
	return hub.CallResult{Content: json.RawMessage(`[{"type":"text","text":"ran"}]`)}, nil
}

// newManager is a Manager over a real SQLite store in a temporary directory.
func newManager(t *testing.T, homes ...string) *Manager {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "hub.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	known := map[string]bool{}
	for _, h := range homes {
		known[h] = true
	}
	m := New(Options{Store: st, HomeExists: func(id string) bool { return known[id] }})
	if err := m.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return m
}

// online makes service name online through a fake link with tools.
func online(t *testing.T, m *Manager, name string, tools ...string) *fakeLink {
	t.Helper()
	m.mu.Lock()
	e := m.entries[name]
	m.mu.Unlock()
	var ts []hub.Tool
	for _, n := range tools {
		ts = append(ts, hub.Tool{Name: n})
	}
	m.setTools(context.Background(), e, ts)
	l := &fakeLink{}
	if !m.attach(e, l, "fake", nil) {
		t.Fatal("attach refused")
	}
	return l
}

// A home's service is there only for that home's people: to anyone else
// it is unknown, with the same status and message as a name that does not
// exist, in the list, the view and a call; a guest of the home may not run
// what reboots, upgrades, resets or unlocks. The hub's own services are
// everyone's.
func TestHomeServicesAreTheHomes(t *testing.T) {
	m := newManager(t, "h1", "h2")
	admin := hub.WithPrincipal(context.Background(), hub.Admin)
	for _, c := range []struct{ name, home string }{{"door", "h1"}, {"calc", ""}} {
		if _, err := m.CreateService(admin, c.name, c.home, "http://hub"); err != nil {
			t.Fatal(err)
		}
	}
	door := online(t, m, "door", "open", "unlock")
	online(t, m, "calc", "calculator", "reset_memory")

	member := &hub.Principal{User: "alice", Homes: map[string]hub.Role{"h1": hub.RoleMember}}
	guest := &hub.Principal{User: "gus", Homes: map[string]hub.Role{"h1": hub.RoleGuest}}
	stranger := &hub.Principal{User: "eve", Homes: map[string]hub.Role{"h2": hub.RoleOwner}}

	names := func(p *hub.Principal) (out []string) {
		for _, v := range m.Services(p) {
			out = append(out, v.Name)
		}
		return out
	}
	if got := names(stranger); len(got) != 1 || got[0] != "calc" {
		t.Fatalf("a stranger to h1 lists %v", got)
	}
	if got := names(member); len(got) != 2 {
		t.Fatalf("a member of h1 lists %v", got)
	}

	_, unknownErr := m.Service(stranger, "nosuch")
	_, seenErr := m.Service(stranger, "door")
	if seenErr == nil || seenErr.Error() != unknownErrFor("door").Error() || hub.ErrorCode(unknownErr) != hub.ErrorCode(seenErr) {
		t.Fatalf("a foreign service: %v (unknown: %v)", seenErr, unknownErr)
	}
	call := func(p *hub.Principal, tool string) error {
		_, err := m.CallService(hub.WithPrincipal(context.Background(), p), hub.ServiceCall{Service: "door", Tool: tool})
		return err
	}
	if err := call(stranger, "open"); hub.ErrorCode(err) != hub.ENOTFOUND || err.Error() != unknownErrFor("door").Error() {
		t.Fatalf("a stranger's call: %v", err)
	}
	if door.calls != 0 {
		t.Fatal("a stranger's call reached the service")
	}
	if err := call(member, "unlock"); err != nil {
		t.Fatalf("a member's call: %v", err)
	}
	if err := call(guest, "open"); err != nil {
		t.Fatalf("a guest's call: %v", err)
	}
	if err := call(guest, "unlock"); hub.ErrorCode(err) != hub.EFORBIDDEN {
		t.Fatalf("a guest unlocking: %v", err)
	}
	hubCall := func(p *hub.Principal, tool string) error {
		_, err := m.CallService(hub.WithPrincipal(context.Background(), p), hub.ServiceCall{Service: "calc", Tool: tool})
		return err
	}
	if err := hubCall(guest, "calculator"); err != nil {
		t.Fatalf("a guest's call of the hub's service: %v", err)
	}
	if err := hubCall(guest, "reset_memory"); hub.ErrorCode(err) != hub.EFORBIDDEN {
		t.Fatalf("a guest resetting through the hub's service: %v", err)
	}
	if err := hubCall(stranger, "reset_memory"); err != nil {
		t.Fatalf("an owner resetting through the hub's service: %v", err)
	}
	if err := m.DeleteService(hub.WithPrincipal(context.Background(), stranger), "door"); hub.ErrorCode(err) != hub.ENOTFOUND {
		t.Fatalf("a stranger deleting: %v", err)
	}
	if err := m.DeleteService(hub.WithPrincipal(context.Background(), member), "door"); hub.ErrorCode(err) != hub.EFORBIDDEN {
		t.Fatalf("a member deleting: %v", err)
	}
	if _, err := m.CreateService(hub.WithPrincipal(context.Background(), member), "mine", "h1", "http://hub"); hub.ErrorCode(err) != hub.EFORBIDDEN {
		t.Fatalf("a member creating: %v", err)
	}
}

func unknownErrFor(name string) error { return notFound(name) }

// Generation and Changed follow what services offer.
func TestChanged(t *testing.T) {
	m := newManager(t)
	g := m.Generation()
	ch := m.Changed(g)
	if _, err := m.CreateService(context.Background(), "calc", "", "http://hub"); err != nil {
		t.Fatal(err)
	}
	<-ch
	g = m.Generation()
	ch = m.Changed(g)
	l := online(t, m, "calc", "calculator")
	<-ch
	if v, _ := m.Service(nil, "calc"); !v.Online || len(v.Tools) != 1 {
		t.Fatalf("%+v", v)
	}
	g = m.Generation()
	m.mu.Lock()
	e := m.entries["calc"]
	m.mu.Unlock()
	m.detach(e, l, "")
	<-m.Changed(g)
	if v, _ := m.Service(nil, "calc"); v.Online || len(v.Tools) != 1 {
		t.Fatalf("offline: %+v", v)
	}
}
