package server_test

import (
	"context"
	"testing"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/server"
	"github.com/xiaozhi-hub/hub/sim"
)

// What people set while the hub runs is the cluster's: the hub's settings,
// a home's own and a device's persona set on one node apply on the other;
// a value removed on the other is removed on the first; a home deleted on
// one node takes its settings with it on both.
func TestSettingsSharedAcrossClusterNodes(t *testing.T) {
	nodes := startCluster(t, 2)
	one, two := nodes[0], nodes[1]
	setting := func(c *clusterNode, path, name string) map[string]any {
		st, body := c.call("GET", path, nil)
		if st != 200 {
			return nil
		}
		v, _ := body["settings"].(map[string]any)[name].(map[string]any)
		return v
	}

	if st, body := one.call("PUT", "/api/settings", map[string]any{"tts-voice": "nova", "tts-api-key": "sk-shared"}); st != 200 {
		t.Fatalf("PUT /api/settings on hub-1: %d %v", st, body)
	}
	waitFor(t, "the voice and key set on hub-1 to apply on hub-2", func() bool {
		v, k := setting(two, "/api/settings", "tts-voice"), setting(two, "/api/settings", "tts-api-key")
		return v["value"] == "nova" && v["source"] == "stored" && k["set"] == true
	})

	d := connectTo(t, one, sim.Config{DeviceID: "aa:00:00:00:c5:01", Lamp: true})
	waitFor(t, "the device known on hub-2", func() bool { return two.device(d.ID())["online"] == true })
	if st, body := one.call("PUT", "/api/devices/"+d.ID()+"/persona", map[string]any{"name": "Jarvis"}); st != 200 {
		t.Fatalf("PUT persona on hub-1: %d %v", st, body)
	}
	waitFor(t, "the persona set on hub-1 on hub-2", func() bool {
		_, body := two.call("GET", "/api/devices/"+d.ID()+"/persona", nil)
		p, _ := body["persona"].(map[string]any)
		return p["name"] == "Jarvis"
	})

	people1 := server.PeopleOf(one.Hub)
	ctx := context.Background()
	if _, err := people1.AddUser(ctx, "alice", "alice's password"); err != nil {
		t.Fatal(err)
	}
	alice, _ := people1.Principal("alice")
	home, err := people1.CreateHome(ctx, alice, "A家")
	if err != nil {
		t.Fatal(err)
	}
	homePath := "/api/homes/" + home.ID + "/settings"
	waitFor(t, "the home on hub-2", func() bool { st, _ := two.call("GET", homePath, nil); return st == 200 })
	if st, body := one.call("PUT", homePath, map[string]any{"tts-voice": "shimmer"}); st != 200 {
		t.Fatalf("PUT home settings on hub-1: %d %v", st, body)
	}
	waitFor(t, "the home's voice on hub-2", func() bool {
		v := setting(two, homePath, "tts-voice")
		return v["value"] == "shimmer" && v["source"] == "home"
	})

	// Removed on hub-2: gone on hub-1 too.
	if st, body := two.call("PUT", "/api/settings", map[string]any{"tts-voice": nil}); st != 200 {
		t.Fatalf("PUT null on hub-2: %d %v", st, body)
	}
	waitFor(t, "the removal on hub-1", func() bool { return setting(one, "/api/settings", "tts-voice")["source"] != "stored" })

	// A home deleted on hub-2 takes its settings on both nodes.
	if err := server.PeopleOf(two.Hub).DeleteHome(ctx, hub.Admin, home.ID); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the home gone on hub-1", func() bool { st, _ := one.call("GET", homePath, nil); return st == 404 })
	if _, err := people1.CreateHome(ctx, alice, "again"); err != nil {
		t.Fatal(err)
	}
}
