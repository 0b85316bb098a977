package server_test

import (
	"context"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/xiaozhi-hub/hub/server"
	"github.com/xiaozhi-hub/hub/server/servertest"
)

// A connection that never sends a request (a browser's pre-connect, an HTTP
// client's spare connection, a port scanner) must not hold the hub's
// shutdown: net/http waits up to 5 s for such connections, longer than the
// hub's whole shutdown budget.
func TestShutdownIsNotHeldByConnectionsWithoutRequests(t *testing.T) {
	cfg := server.DefaultConfig()
	cfg.Listen = "127.0.0.1:0"
	cfg.DataDir = t.TempDir()
	cfg.APIToken = servertest.Token
	h, err := server.Open(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.Run(ctx) }()

	addr := h.URL()[len("http://"):]
	var conns []net.Conn
	for range 3 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns = append(conns, c)
	}
	// Make sure the hub has accepted them: one full request on another
	// connection is served after the accepts above.
	if c, err := net.Dial("tcp", addr); err == nil {
		_, _ = c.Write([]byte("GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"))
		_, _ = c.Read(make([]byte, 512))
		c.Close()
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("shutdown with idle new connections: %v", err)
	}
	for _, c := range conns {
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if n, err := c.Read(make([]byte, 1)); err == nil {
			t.Errorf("connection still open after shutdown (read %d bytes)", n)
		}
	}
}
