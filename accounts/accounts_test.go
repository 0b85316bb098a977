package accounts_test

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/accounts"
	"github.com/xiaozhi-hub/hub/store"
)

// clock is a time that tests move by hand.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// open returns a service over a real store in dir, loaded.
func open(t *testing.T, dir string, c *clock) *accounts.Service {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(dir, "hub.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	s := accounts.New(st, accounts.Options{Now: c.Now, LoginTTL: time.Hour})
	if err := s.Load(ctx); err != nil {
		t.Fatal(err)
	}
	return s
}

func newClock() *clock { return &clock{now: time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)} }

func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	if hub.ErrorCode(err) != code {
		t.Fatalf("got %v, want %s", err, code)
	}
}

// A password is kept as an argon2id hash that checks the right password
// and no other, across a restart.
func TestPasswordRoundTrip(t *testing.T) {
	ctx, dir, c := context.Background(), t.TempDir(), newClock()
	s := open(t, dir, c)
	if _, err := s.AddUser(ctx, "alice", "correct horse"); err != nil {
		t.Fatal(err)
	}
	s = open(t, dir, c) // from the store
	if _, _, err := s.Login(ctx, "alice", "correct horse", "10.0.0.1"); err != nil {
		t.Fatalf("the right password: %v", err)
	}
	_, _, err := s.Login(ctx, "alice", "correct horsE", "10.0.0.1")
	wantCode(t, err, hub.EUNAUTHORIZED)
	_, _, err2 := s.Login(ctx, "nobody", "correct horse", "10.0.0.1")
	if hub.ErrorMessage(err) != hub.ErrorMessage(err2) {
		t.Fatalf("a wrong password says %q, an unknown name %q", err, err2)
	}
	if err := s.SetPassword(ctx, "alice", "battery staple"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Login(ctx, "alice", "battery staple", "10.0.0.2"); err != nil {
		t.Fatalf("the new password: %v", err)
	}
}

func TestNameAndPasswordRules(t *testing.T) {
	ctx := context.Background()
	s := open(t, t.TempDir(), newClock())
	for _, bad := range []string{"", "admin", "Admin", "a b", "a/b", "x\x00", strings.Repeat("n", 65)} {
		_, err := s.AddUser(ctx, bad, "long enough")
		wantCode(t, err, hub.EINVALID)
	}
	_, err := s.AddUser(ctx, "bob", "7chars!")
	wantCode(t, err, hub.EINVALID)
	_, err = s.AddUser(ctx, "bob", strings.Repeat("p", accounts.MaxPassword+1))
	wantCode(t, err, hub.EINVALID)
	if _, err := s.AddUser(ctx, "李雷", "8 chars!"); err != nil {
		t.Fatalf("a Chinese name: %v", err)
	}
	_, err = s.AddUser(ctx, "李雷", "another one")
	wantCode(t, err, hub.ECONFLICT)
}

// A home keeps an owner: the last one can neither be demoted nor leave
// while others stay; members and guests manage nobody.
func TestLastOwnerAndRoles(t *testing.T) {
	ctx := context.Background()
	s := open(t, t.TempDir(), newClock())
	for _, n := range []string{"alice", "bob", "carol"} {
		if _, err := s.AddUser(ctx, n, n+"-password"); err != nil {
			t.Fatal(err)
		}
	}
	alice, _ := s.Principal("alice")
	h, err := s.CreateHome(ctx, alice, "A")
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, s.SetMember(ctx, alice, h.ID, "alice", hub.RoleMember), hub.ECONFLICT)
	if err := s.SetMember(ctx, alice, h.ID, "bob", hub.RoleMember); err != nil {
		t.Fatal(err)
	}
	wantCode(t, s.RemoveMember(ctx, alice, h.ID, "alice"), hub.ECONFLICT)
	bob, _ := s.Principal("bob")
	wantCode(t, s.SetMember(ctx, bob, h.ID, "carol", hub.RoleGuest), hub.EFORBIDDEN)
	carol, _ := s.Principal("carol")
	wantCode(t, s.SetMember(ctx, carol, h.ID, "carol", hub.RoleOwner), hub.ENOTFOUND)
	if err := s.SetMember(ctx, alice, h.ID, "bob", hub.RoleOwner); err != nil {
		t.Fatal(err)
	}
	if err := s.RemoveMember(ctx, alice, h.ID, "alice"); err != nil {
		t.Fatalf("an owner leaves when another owner stays: %v", err)
	}
	if err := s.RemoveMember(ctx, bob, h.ID, "bob"); err != nil {
		t.Fatalf("the last person leaves: %v", err)
	}
}

// Failed logins are limited per name and per address, with the wait
// said; the limit refills with time (an injected clock).
func TestLoginLimits(t *testing.T) {
	ctx, c := context.Background(), newClock()
	s := open(t, t.TempDir(), c)
	if _, err := s.AddUser(ctx, "alice", "alice-password"); err != nil {
		t.Fatal(err)
	}
	for i := range 5 { // the name's burst, from different addresses
		_, _, err := s.Login(ctx, "alice", "wrong", "10.0.0."+string(rune('1'+i)))
		wantCode(t, err, hub.EUNAUTHORIZED)
	}
	_, _, err := s.Login(ctx, "alice", "alice-password", "10.0.1.1")
	wantCode(t, err, hub.ETOOMANY)
	if hub.RetryAfter(err) <= 0 {
		t.Fatalf("no Retry-After: %v", err)
	}
	c.add(hub.RetryAfter(err))
	if _, _, err := s.Login(ctx, "alice", "alice-password", "10.0.1.1"); err != nil {
		t.Fatalf("after the wait: %v", err)
	}
	for i := range 10 { // the address's burst, over many names
		_, _, err := s.Login(ctx, "name"+string(rune('a'+i)), "wrong", "10.0.2.1")
		wantCode(t, err, hub.EUNAUTHORIZED)
	}
	_, _, err = s.Login(ctx, "alice", "alice-password", "10.0.2.1")
	wantCode(t, err, hub.ETOOMANY)
}

// Expired logins are forgotten at Load; personal tokens stay until
// revoked; Recheck follows revocation and homes.
func TestLoadDropsExpiredLogins(t *testing.T) {
	ctx, dir, c := context.Background(), t.TempDir(), newClock()
	s := open(t, dir, c)
	if _, err := s.AddUser(ctx, "alice", "alice-password"); err != nil {
		t.Fatal(err)
	}
	login, _, err := s.Login(ctx, "alice", "alice-password", "10.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	personal, _, err := s.CreateToken(ctx, "alice", "script")
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Resolve(login)
	if err != nil {
		t.Fatal(err)
	}
	c.add(2 * time.Hour)
	s = open(t, dir, c)
	if got := s.Tokens("alice"); len(got) != 1 || got[0].Kind != hub.TokenPersonal {
		t.Fatalf("after Load: %v", got)
	}
	_, err = s.Resolve(login)
	wantCode(t, err, hub.EUNAUTHORIZED)
	_, err = s.Recheck(p)
	wantCode(t, err, hub.EUNAUTHORIZED)
	q, err := s.Resolve(personal)
	if err != nil || q.Token != "script" {
		t.Fatalf("the personal token: %v %v", q, err)
	}
	gen := s.Generation()
	changed := s.Changed(gen)
	h, err := s.CreateHome(ctx, q, "A")
	if err != nil {
		t.Fatal(err)
	}
	<-changed
	if q, err = s.Recheck(q); err != nil || q.Homes[h.ID] != hub.RoleOwner {
		t.Fatalf("recheck: %v %v", q, err)
	}
	if err := s.RevokeToken(ctx, "alice", q.Credential); err != nil {
		t.Fatal(err)
	}
	_, err = s.Recheck(q)
	wantCode(t, err, hub.EUNAUTHORIZED)
}
