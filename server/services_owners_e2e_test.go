package server_test

import (
	"context"
	"strings"
	"testing"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/server"
)

// A home's owner creates services for their home and may delete them; a
// member or guest of that home may do neither (403 saying why), nobody
// but the admin makes the hub's own services, and a home the caller is
// not in is an unknown home. GET /api/services shows each person their
// homes' services and the hub's: a person of another home does not see
// the service, and its name is to them an unknown service's.
func TestHomeOwnersCreateServices(t *testing.T) {
	h := startHub(t, "", nil)
	w := startTwoHomes(t, h) // alice owns A; bob owns B and is a guest in A
	ctx := context.Background()
	acc := server.AccountsOf(h.Hub)
	if _, err := acc.AddUser(ctx, "carol", "password-of-carol"); err != nil {
		t.Fatal(err)
	}
	alice, _ := acc.Principal("alice")
	if err := acc.SetMember(ctx, alice, w.homeA, "carol", hub.RoleMember); err != nil {
		t.Fatal(err)
	}
	carol, _, err := acc.CreateToken(ctx, "carol", "script")
	if err != nil {
		t.Fatal(err)
	}
	create := func(token, name, home string) (int, map[string]any) {
		t.Helper()
		return h.callWith(token, "POST", "/api/services", map[string]any{"name": name, "home": home})
	}
	names := func(token string) string {
		t.Helper()
		st, body := h.callWith(token, "GET", "/api/services", nil)
		if st != 200 {
			t.Fatalf("GET /api/services: %d %v", st, body)
		}
		var out []string
		for _, s := range body["services"].([]any) {
			out = append(out, s.(map[string]any)["name"].(string))
		}
		return strings.Join(out, ",")
	}

	// bob, owner of home B, creates a service there and connects it.
	st, body := create(w.bob, "bcalc", w.homeB)
	if st != 201 || body["home"] != w.homeB || !strings.Contains(toJSON(body), "/services/ws?token=xzs_") {
		t.Fatalf("bob creates a service for his home: %d %v", st, body)
	}
	program(t, body["url"].(string), calcTool)
	waitFor(t, "bcalc online", func() bool {
		v, err := server.ServicesOf(h.Hub).Service(nil, "bcalc")
		return err == nil && v.Online
	})
	if st, body := create(h.Token, "hubcalc", ""); st != 201 {
		t.Fatalf("the admin creates the hub's service: %d %v", st, body)
	}

	// Who sees what.
	if got := names(w.bob); got != "bcalc,hubcalc" {
		t.Fatalf("bob sees %q", got)
	}
	if got := names(w.alice); got != "hubcalc" {
		t.Fatalf("alice (not in home B) sees %q", got)
	}
	if got := names(carol); got != "hubcalc" {
		t.Fatalf("carol (a member of home A) sees %q", got)
	}
	stF, bodyF := h.callWith(carol, "GET", "/api/services/bcalc", nil)
	stU, bodyU := h.callWith(carol, "GET", "/api/services/nope1", nil)
	if stF != 404 || stF != stU || strings.ReplaceAll(errMessage(bodyF), "bcalc", "X") != strings.ReplaceAll(errMessage(bodyU), "nope1", "X") {
		t.Fatalf("carol asks for home B's service: %d %v; an unknown one: %d %v", stF, bodyF, stU, bodyU)
	}
	stF, bodyF = h.callWith(carol, "DELETE", "/api/services/bcalc", nil)
	stU, bodyU = h.callWith(carol, "DELETE", "/api/services/nope1", nil)
	if stF != 404 || stF != stU || strings.ReplaceAll(errMessage(bodyF), "bcalc", "X") != strings.ReplaceAll(errMessage(bodyU), "nope1", "X") {
		t.Fatalf("carol deletes home B's service: %d %v; an unknown one: %d %v", stF, bodyF, stU, bodyU)
	}

	// Who may not create: a guest, a member, anyone but the admin for the
	// hub, and nobody for a home they are not in.
	for _, c := range []struct {
		who, token, home string
		status           int
		says             string
	}{
		{"bob, a guest in home A", w.bob, w.homeA, 403, "you are a guest there"},
		{"carol, a member of home A", carol, w.homeA, 403, "you are a member there"},
		{"bob, for everyone", w.bob, "", 403, "only the admin creates the hub's own services"},
		{"carol, for home B", carol, w.homeB, 404, `home "` + w.homeB + `" is not known`},
	} {
		st, body := create(c.token, "c1", c.home)
		if st != c.status || !strings.Contains(errMessage(body), c.says) {
			t.Errorf("%s: %d %v; want %d saying %q", c.who, st, body, c.status, c.says)
		}
	}
	_, foreign := create(carol, "c1", w.homeB)
	_, unknown := create(carol, "c1", "h_nope")
	if strings.ReplaceAll(errMessage(foreign), w.homeB, "X") != strings.ReplaceAll(errMessage(unknown), "h_nope", "X") {
		t.Fatalf("a home one is not in: %v; an unknown one: %v", foreign, unknown)
	}
	if got := names(h.Token); got != "bcalc,hubcalc" {
		t.Fatalf("refused creations made services: %q", got)
	}
	// The name is taken, and that is all alice learns of bob's service.
	if st, body := create(w.alice, "bcalc", w.homeA); st != 409 || strings.Contains(errMessage(body), "DELETE") {
		t.Fatalf("alice takes bob's service's name: %d %v", st, body)
	}

	// alice owns home A: she creates there; its member and guest may not
	// delete it, nor may bob delete the hub's; she does.
	if st, body := create(w.alice, "acalc", w.homeA); st != 201 {
		t.Fatalf("alice creates for home A: %d %v", st, body)
	}
	if got := names(carol); got != "acalc,hubcalc" {
		t.Fatalf("carol sees %q", got)
	}
	for _, c := range []struct{ who, token, name, says string }{
		{"carol, a member", carol, "acalc", "you are a member there"},
		{"bob, a guest", w.bob, "acalc", "you are a guest there"},
		{"bob, the hub's", w.bob, "hubcalc", "only the admin deletes the hub's own services"},
	} {
		if st, body := h.callWith(c.token, "DELETE", "/api/services/"+c.name, nil); st != 403 || !strings.Contains(errMessage(body), c.says) {
			t.Errorf("%s deletes %s: %d %v", c.who, c.name, st, body)
		}
	}
	if st, body := h.callWith(w.alice, "DELETE", "/api/services/acalc", nil); st != 204 {
		t.Fatalf("alice deletes her home's service: %d %v", st, body)
	}
	if st, body := h.callWith(w.bob, "DELETE", "/api/services/bcalc", nil); st != 204 {
		t.Fatalf("bob deletes his home's service: %d %v", st, body)
	}
	if got := names(h.Token); got != "hubcalc" {
		t.Fatalf("after the owners' deletions: %q", got)
	}
}
