package cluster_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/accounts"
	"github.com/xiaozhi-hub/hub/store"
)

const password = "correct horse battery"

// resolves reports whether m takes secret as a user's token.
func (m *member) resolves(secret string) bool {
	_, err := m.people.Resolve(secret)
	return err == nil
}

// roleOf is user's role in home id on m ("" if none).
func (m *member) roleOf(user, id string) hub.Role {
	p, ok := m.people.Principal(user)
	if !ok {
		return ""
	}
	return p.Homes[id]
}

// A login on one node opens the others; a home and its members made on
// one are known to all; a token revoked on one node, and a user removed
// on another, are refused everywhere, and stay so in every node's store.
func TestPeopleAreSharedByEveryNode(t *testing.T) {
	e := startNATS(t)
	dbA := filepath.Join(t.TempDir(), "hub.db")
	a, leaveA := joinWith(t, e, "a", dbA)
	b := join(t, e, "b")
	ctx := context.Background()

	if _, err := a.people.AddUser(ctx, "alice", password); err != nil {
		t.Fatal(err)
	}
	if _, err := a.people.AddUser(ctx, "bob", password); err != nil {
		t.Fatal(err)
	}
	eventually(t, "alice and bob on b", func() bool { return len(b.people.Users()) == 2 })
	login, _, err := b.people.Login(ctx, "alice", password, "192.0.2.1") // her password works on b
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "alice's login from b to open a", func() bool { return a.resolves(login) })

	alice, _ := a.people.Principal("alice")
	home, err := a.people.CreateHome(ctx, alice, "A家")
	if err != nil {
		t.Fatal(err)
	}
	if err := a.people.SetMember(ctx, alice, home.ID, "bob", hub.RoleGuest); err != nil {
		t.Fatal(err)
	}
	eventually(t, "alice owner and bob guest of her home on b", func() bool {
		return b.roleOf("alice", home.ID) == hub.RoleOwner && b.roleOf("bob", home.ID) == hub.RoleGuest
	})
	p, err := b.people.Resolve(login)
	if err != nil || p.RoleIn(home.ID) != hub.RoleOwner {
		t.Fatalf("alice's login on b = %+v, %v; want her as the owner of %s", p, err, home.ID)
	}

	// Bob removed from the home on b: a no longer lets him in.
	if err := b.people.RemoveMember(ctx, alice, home.ID, "bob"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "bob out of the home on a", func() bool { return a.roleOf("bob", home.ID) == "" })

	// A personal token made on b, revoked on a: refused on b.
	personal, view, err := b.people.CreateToken(ctx, "alice", "script")
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "the personal token on a", func() bool { return a.resolves(personal) })
	if err := a.people.RevokeToken(ctx, "alice", view.ID); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the revoked token refused on b", func() bool { return !b.resolves(personal) })

	// Alice removed on b: her login is refused on a at once, and her home
	// (whose last owner she was) keeps no trace of her.
	if err := b.people.DeleteUser(ctx, "alice"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "alice's login refused on a", func() bool { return !a.resolves(login) })
	eventually(t, "alice gone from a", func() bool { _, ok := a.people.Principal("alice"); return !ok })
	if h, err := a.people.Home(hub.Admin, home.ID); err != nil || len(h.Members) != 0 {
		t.Fatalf("alice's home on a is %+v, %v; want it without her", h, err)
	}

	// What a applied is in its own store: it reloads without alice.
	leaveA()
	st, err := store.Open(ctx, dbA, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	users, _, tokens, err := st.LoadAccounts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range users {
		if u.Name == "alice" {
			t.Error("alice is still in a's store")
		}
	}
	for _, tk := range tokens {
		if tk.User == "alice" {
			t.Errorf("a's store still holds alice's %s token", tk.Kind)
		}
	}
}

// A hub that joins with people of its own shares them; a node that was
// away while a user was removed does not bring the user back.
func TestJoiningSharesPeopleButNotTheRemoved(t *testing.T) {
	e := startNATS(t)
	ctx := context.Background()

	// carol exists on c's own database before c joins.
	dbC := filepath.Join(t.TempDir(), "hub.db")
	st, err := store.Open(ctx, dbC, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	alone := accounts.New(st, accounts.Options{})
	if err := alone.Load(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := alone.AddUser(ctx, "carol", password); err != nil {
		t.Fatal(err)
	}
	token, _, err := alone.CreateToken(ctx, "carol", "script")
	if err != nil {
		t.Fatal(err)
	}
	st.Close()

	a := join(t, e, "a")
	c, leaveC := joinWith(t, e, "c", dbC)
	eventually(t, "carol's token opening a", func() bool { return a.resolves(token) })
	if !c.resolves(token) {
		t.Fatal("c no longer takes its own user's token after joining")
	}

	// c away; carol removed on a; c back on the same database.
	leaveC()
	if err := a.people.DeleteUser(ctx, "carol"); err != nil {
		t.Fatal(err)
	}
	c, _ = joinWith(t, e, "c", dbC)
	if c.resolves(token) {
		t.Fatal("c, back after carol's removal, still takes her token")
	}
	if _, ok := c.people.Principal("carol"); ok {
		t.Fatal("c, back after carol's removal, still knows her")
	}
	if _, ok := a.people.Principal("carol"); ok {
		t.Fatal("c brought carol back to a")
	}

	// A token of carol's written to the shared state as she was removed
	// (made on a node that had not yet seen the removal) is left there.
	stale := "xzu_made-while-carol-was-removed"
	sum := sha256.Sum256([]byte(stale))
	b, _ := json.Marshal(hub.UserToken{ID: "0011223344556677", User: "carol", Kind: hub.TokenPersonal, Name: "late", Hash: sum[:], Created: time.Now()})
	nc, err := e.Connect("test")
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	kv, err := js.KeyValue(ctx, "xzhub_state")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(ctx, "at."+base64.RawURLEncoding.EncodeToString([]byte("0011223344556677")), b); err != nil {
		t.Fatal(err)
	}
	if _, err := c.people.AddUser(ctx, "dave", password); err != nil { // a change after it: once a has it, it has the token
		t.Fatal(err)
	}
	eventually(t, "dave on a", func() bool { _, ok := a.people.Principal("dave"); return ok })

	// A new user of the same name is opened by no token of the old one.
	if _, err := a.people.AddUser(ctx, "carol", password+"!"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the new carol on c", func() bool { _, ok := c.people.Principal("carol"); return ok })
	d := join(t, e, "d") // and a node that starts afresh
	for _, secret := range []string{token, stale} {
		if a.resolves(secret) || c.resolves(secret) || d.resolves(secret) {
			t.Fatal("a token of the removed carol opens the new carol's account")
		}
	}
}

// Which home a device is in travels with its record, to the nodes there
// and to a node that joins later (merged field by field with concurrent
// changes: TestConcurrentChangesOnTwoNodesAreMerged).
func TestDeviceHomeIsShared(t *testing.T) {
	e := startNATS(t)
	a, b := join(t, e, "a"), join(t, e, "b")
	ctx := context.Background()
	const id, home = "aa:00:00:00:0d:21", "a1b2c3"
	if _, err := a.reg.Register(ctx, id, hub.DevicePatch{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the device on b", func() bool { _, err := b.reg.Device(id); return err == nil })
	h := home
	if _, err := b.reg.UpdateDevice(ctx, id, hub.DevicePatch{Home: &h}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the device in its home on a", func() bool { d, _ := a.reg.Device(id); return d.Home == home })
	c := join(t, e, "c")
	if d, err := c.reg.Device(id); err != nil || d.Home != home {
		t.Fatalf("a node that joined later has %+v, %v; want the device in its home", d, err)
	}
}
