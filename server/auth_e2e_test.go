package server_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/xiaozhi-hub/hub/server"
	"github.com/xiaozhi-hub/hub/sim"
)

func TestAPIRequiresToken(t *testing.T) {
	h := startHub(t, "", nil)
	for _, tok := range []string{"", "wrong-token-0123456789"} {
		st, body := h.callWith(tok, "GET", "/api/devices", nil)
		if st != 401 || errCode(body) != "unauthorized" {
			t.Fatalf("token %q: %d %v", tok, st, body)
		}
	}
	for _, open := range []string{"/healthz", "/metrics"} {
		res, err := http.Get(h.URL() + open)
		if err != nil || res.StatusCode != 200 {
			t.Fatalf("%s without a token: %v %v", open, res, err)
		}
		res.Body.Close()
	}
}

func TestGeneratedTokenFile(t *testing.T) {
	dir := t.TempDir()
	h := startHub(t, dir, func(c *server.Config) { c.APIToken = "" })
	if len(h.Token) < 32 {
		t.Fatalf("generated token %q is too short", h.Token)
	}
	st, _ := h.call("GET", "/api/devices", nil)
	if st != 200 {
		t.Fatalf("the generated token must work: %d", st)
	}
	h.stop()
	// The same token is used after a restart.
	h2 := startHub(t, dir, func(c *server.Config) { c.APIToken = "" })
	if h2.Token != h.Token {
		t.Fatal("the token changed across restarts")
	}
}

func TestDeviceTokenAuth(t *testing.T) {
	h := startHub(t, "", func(c *server.Config) {
		c.DeviceAuth = "token"
		c.DeviceTokens = []string{"device-secret"}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, tok := range []string{"", "nope"} {
		d := sim.New(sim.Config{URL: h.DeviceURL(), DeviceID: "aa:00:00:00:02:01", Token: tok})
		err := d.Connect(ctx)
		if err == nil || !strings.Contains(err.Error(), "401") {
			t.Fatalf("token %q: want a 401 refusal, got %v", tok, err)
		}
	}
	d := h.device(sim.Config{DeviceID: "aa:00:00:00:02:01", Token: "device-secret"})
	h.readyTools(d.ID())
	// Browser-style clients put the identity in the query string.
	q := h.device(sim.Config{DeviceID: "aa:00:00:00:02:02", Token: "device-secret", IdentityInQuery: true})
	h.readyTools(q.ID())
}

func TestDemoDevicesAppear(t *testing.T) {
	h := startHub(t, "", nil)
	startDemo(t, h, 3)
	waitFor(t, "3 demo devices online", func() bool {
		_, body := h.call("GET", "/api/devices", nil)
		devs, _ := body["devices"].([]any)
		online := 0
		for _, d := range devs {
			if m := d.(map[string]any); m["online"] == true && m["name"] != "" {
				online++
			}
		}
		return online == 3
	})
}
