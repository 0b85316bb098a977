package server_test

import (
	"context"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xiaozhi-hub/hub/server"
	"github.com/xiaozhi-hub/hub/server/servertest"
)

// TestFailedOpenReleasesEverything: a hub that cannot listen (its address
// is taken) fails to open after it has bound the MQTT broker and the UDP
// socket, opened the store and taken the data directory; it leaves all of
// them free, so that the person who fixes the address can start it at once.
func TestFailedOpenReleasesEverything(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	mqttAddr := servertest.FreeAddr(t)
	cfg := server.DefaultConfig()
	cfg.Listen, cfg.DataDir, cfg.APIToken, cfg.DeviceAuth = taken.Addr().String(), filepath.Join(t.TempDir(), "data"), servertest.Token, "open"
	cfg.MQTTListen = mqttAddr
	log := slog.New(slog.DiscardHandler)
	if h, err := server.Open(context.Background(), cfg, log); err == nil {
		h.Close()
		t.Fatal("a hub opened on an address in use")
	} else if !strings.Contains(err.Error(), "listen on "+cfg.Listen) {
		t.Fatalf("error %q does not name the address", err)
	}
	// The broker's TCP port and the UDP audio port (the same number) are free.
	if ln, err := net.Listen("tcp", mqttAddr); err != nil {
		t.Errorf("the MQTT port stayed bound: %v", err)
	} else {
		ln.Close()
	}
	if pc, err := net.ListenPacket("udp", mqttAddr); err != nil {
		t.Errorf("the UDP audio port stayed bound: %v", err)
	} else {
		pc.Close()
	}
	// The data directory is free: the same hub on a free address opens.
	cfg.Listen = "127.0.0.1:0"
	h, err := server.Open(context.Background(), cfg, log)
	if err != nil {
		t.Fatalf("the data directory stayed taken: %v", err)
	}
	if err := h.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	if err := h.Close(); err != nil { // a second Close does nothing
		t.Errorf("second close: %v", err)
	}
}
