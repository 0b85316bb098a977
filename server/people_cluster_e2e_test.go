package server_test

import (
	"context"
	"strings"
	"testing"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/server"
	"github.com/xiaozhi-hub/hub/sim"
)

// People on a two-node cluster: alice logs in on hub-1 and acts on hub-2
// with that login, reaching her home's device (connected to hub-1) and
// not bob's (connected to hub-2), which is as unknown to her as a device
// that does not exist; a home made and a device bound on hub-1 are seen on
// hub-2; a login revoked on one node is refused on the other; alice
// removed on hub-2 is refused on hub-1.
func TestPeopleActAcrossClusterNodes(t *testing.T) {
	nodes := startCluster(t, 2)
	one, two := nodes[0], nodes[1]
	people1, people2 := server.PeopleOf(one.Hub), server.PeopleOf(two.Hub)
	ctx := context.Background()

	ours := connectTo(t, one, sim.Config{DeviceID: "aa:00:00:00:c2:01", Lamp: true})
	theirs := connectTo(t, two, sim.Config{DeviceID: "aa:00:00:00:c2:02", Lamp: true})
	for _, c := range nodes {
		for _, d := range []*sim.Device{ours, theirs} {
			waitFor(t, d.ID()+" online with its tools on "+c.name, func() bool {
				return c.device(d.ID())["online"] == true && lampTool(t, c, d.ID()) != ""
			})
		}
	}

	// The admin makes alice on hub-1 and bob on hub-2.
	if _, err := people1.AddUser(ctx, "alice", "alice's password"); err != nil {
		t.Fatal(err)
	}
	if _, err := people2.AddUser(ctx, "bob", "bob's password"); err != nil {
		t.Fatal(err)
	}

	// alice logs in on hub-1, makes her home there and binds her lamp to
	// it; bob does the same with his on hub-2.
	token, _, err := people1.Login(ctx, "alice", "alice's password", "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	alice, _ := people1.Principal("alice")
	homeA, err := people1.CreateHome(ctx, alice, "A家")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := one.Registry.UpdateDevice(ctx, ours.ID(), hub.DevicePatch{Home: &homeA.ID}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "bob on hub-2", func() bool { _, ok := people2.Principal("bob"); return ok })
	bob, _ := people2.Principal("bob")
	homeB, err := people2.CreateHome(ctx, bob, "B家")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := two.Registry.UpdateDevice(ctx, theirs.ID(), hub.DevicePatch{Home: &homeB.ID}); err != nil {
		t.Fatal(err)
	}

	// hub-2 knows her home, her role in it and where the lamp is.
	waitFor(t, "alice's home and lamp on hub-2", func() bool {
		h, err := people2.Home(hub.Admin, homeA.ID)
		return err == nil && len(h.Members) == 1 && h.Members[0] == hub.HomeMember{User: "alice", Role: hub.RoleOwner} &&
			two.device(ours.ID())["home"] == homeA.ID
	})
	waitFor(t, "bob's lamp in his home on hub-1", func() bool { return one.device(theirs.ID())["home"] == homeB.ID })

	// Her login from hub-1 opens hub-2, as her.
	waitFor(t, "alice's login to open hub-2", func() bool {
		st, _ := two.callWith(token, "GET", "/api/devices", nil)
		return st == 200
	})
	p, err := people2.Resolve(token)
	if err != nil || p.User != "alice" || p.RoleIn(homeA.ID) != hub.RoleOwner || p.Sees(homeB.ID) {
		t.Fatalf("alice's login on hub-2 is %+v, %v; want alice, owner of %s only", p, err, homeA.ID)
	}
	var seen []string
	for _, d := range two.Registry.Devices() {
		if p.Sees(d.Home) {
			seen = append(seen, d.ID)
		}
	}
	if len(seen) != 1 || seen[0] != ours.ID() {
		t.Fatalf("of hub-2's devices, alice's login sees %v; want only %s", seen, ours.ID())
	}

	// On hub-2 she calls her lamp (held by hub-1); bob's lamp, held by
	// hub-2 itself, is to her what a device that does not exist is.
	call := func(id string) (int, map[string]any) {
		return two.callWith(token, "POST", "/api/devices/"+id+"/tools/self.lamp.turn_on/call", map[string]any{"arguments": map[string]any{}})
	}
	if st, body := call(ours.ID()); st != 200 || body["isError"] == true {
		t.Fatalf("alice calling her lamp on hub-2: %d %v", st, body)
	}
	waitFor(t, "alice's lamp on", ours.LampOn)
	stTheirs, bodyTheirs := call(theirs.ID())
	stNone, bodyNone := call("aa:00:00:00:c2:99")
	same := strings.ReplaceAll(errMessage(bodyTheirs), theirs.ID(), "<id>") == strings.ReplaceAll(errMessage(bodyNone), "aa:00:00:00:c2:99", "<id>")
	if stTheirs != 404 || stTheirs != stNone || !same {
		t.Fatalf("alice calling bob's lamp on hub-2: %d %v; want what a device that does not exist gets: %d %v", stTheirs, bodyTheirs, stNone, bodyNone)
	}
	if theirs.LampOn() {
		t.Fatal("alice's call reached bob's lamp")
	}

	// bob's login from hub-2 revoked on hub-1: refused on hub-2.
	bobToken, bobLogin, err := people2.Login(ctx, "bob", "bob's password", "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "bob's login to open hub-1", func() bool {
		st, _ := one.callWith(bobToken, "GET", "/api/devices", nil)
		return st == 200
	})
	if err := people1.RevokeToken(ctx, "bob", bobLogin.ID); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "bob's revoked login refused on hub-2", func() bool {
		st, _ := two.callWith(bobToken, "GET", "/api/devices", nil)
		return st == 401
	})

	// alice removed on hub-2: her login is refused on hub-1.
	if err := people2.DeleteUser(ctx, "alice"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "alice's login refused on hub-1", func() bool {
		st, _ := one.callWith(token, "GET", "/api/devices", nil)
		return st == 401
	})
	if st, body := one.callWith(token, "POST", "/api/devices/"+ours.ID()+"/tools/self.lamp.turn_off/call", map[string]any{"arguments": map[string]any{}}); st != 401 {
		t.Fatalf("a call with the removed alice's login on hub-1: %d %v; want 401", st, body)
	}
	if !ours.LampOn() {
		t.Fatal("the removed alice's call reached her lamp")
	}
}
