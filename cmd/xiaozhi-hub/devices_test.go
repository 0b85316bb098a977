package main

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/xiaozhi-hub/hub/server"
	"github.com/xiaozhi-hub/hub/sim"
)

// startHub runs a hub as normally started (device-auth activation,
// generated admin token) until the test ends, and returns it with its
// data directory.
func startHub(t *testing.T) (*server.Hub, string) {
	t.Helper()
	dir := t.TempDir()
	cfg := server.DefaultConfig()
	cfg.Listen, cfg.DataDir = "127.0.0.1:0", dir
	h, err := server.Open(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- h.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-stopped })
	return h, dir
}

// TestDevicesApprove runs a hub as normally started (device-auth
// activation, generated admin token) and approves a device with
// "xiaozhi-hub devices approve CODE", reading the token from the data dir.
func TestDevicesApprove(t *testing.T) {
	h, dir := startHub(t)
	ctx := t.Context()

	codes := make(chan string, 1)
	d := sim.New(sim.Config{OTAURL: h.OTAURL(), DeviceID: "ad:00:00:00:00:01", ActivationPoll: 5 * time.Millisecond,
		OnActivation: func(code, _ string) {
			select {
			case codes <- code:
			default:
			}
		}})
	defer d.Close()
	done := make(chan error, 1)
	go func() { _, err := d.Provision(ctx); done <- err }()
	var code string
	select {
	case code = <-codes:
	case <-time.After(10 * time.Second):
		t.Fatal("no activation code")
	}

	cli := func(args ...string) (int, string) {
		var out, errb bytes.Buffer
		args = append(args, "--url", h.URL(), "--data-dir", dir)
		rc := run(context.Background(), append([]string{"devices"}, args...), &out, &errb)
		return rc, out.String() + errb.String()
	}
	if rc, out := cli("pending"); rc != 0 || !strings.Contains(out, code) || !strings.Contains(out, "ad:00:00:00:00:01") {
		t.Fatalf("pending: %d %s", rc, out)
	}
	if rc, out := cli("approve", "999999x"); rc != 1 || !strings.Contains(out, "no device is waiting") {
		t.Fatalf("unknown code: %d %s", rc, out)
	}
	if rc, out := cli("approve", code, "--name", "Kitchen"); rc != 0 || !strings.Contains(out, "approved device ad:00:00:00:00:01") {
		t.Fatalf("approve: %d %s", rc, out)
	}
	if err := <-done; err != nil {
		t.Fatalf("provision after approval: %v", err)
	}
	cctx, ccancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer ccancel()
	if err := d.Connect(cctx); err != nil {
		t.Fatalf("approved device: %v", err)
	}
	if dev, err := h.Registry.Device(d.ID()); err != nil || dev.Name != "Kitchen" {
		t.Fatalf("device: %+v %v", dev, err)
	}
	if rc, out := cli("rebind", d.ID(), "--client-id", "11111111-2222-4333-8444-555555555555"); rc != 0 || !strings.Contains(out, "re-bound") {
		t.Fatalf("rebind: %d %s", rc, out)
	}
	if rc, out := cli("revoke", d.ID()); rc != 0 || !strings.Contains(out, "revoked") {
		t.Fatalf("revoke: %d %s", rc, out)
	}
	if rc, _ := cli("approve"); rc != 2 {
		t.Fatalf("approve without a code: %d", rc)
	}
	if rc, out := cli("pending", "--token", "wrong-token-0123456789"); rc != 1 || !strings.Contains(out, "401") {
		t.Fatalf("wrong token: %d %s", rc, out)
	}
}
