// Package servertest runs a real hub on a loopback port for end-to-end
// tests in any package: the same assembly as the command, with its data in a
// temporary directory, device-auth open and a fixed admin token unless the
// test changes them.
package servertest

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/xiaozhi-hub/hub/server"
)

// Token is the admin token of a hub started by Start.
const Token = "test-token-0123456789"

// Start opens and runs a hub with the config adjusted by edit (may be nil).
// Its warnings and errors go to the test log. stop shuts it down and waits;
// it runs at cleanup too, and may be called earlier (to restart a hub on
// the same data directory, say).
func Start(tb testing.TB, edit func(*server.Config)) (h *server.Hub, stop func()) {
	tb.Helper()
	cfg := server.DefaultConfig()
	cfg.Listen = "127.0.0.1:0"
	cfg.DataDir = tb.TempDir()
	cfg.APIToken = Token
	cfg.DeviceAuth = "open"
	if edit != nil {
		edit(&cfg)
	}
	h, err := open(tb, cfg)
	if err != nil {
		tb.Fatalf("open hub: %v", err)
	}
	stop = run(tb, h)
	tb.Cleanup(stop)
	return h, stop
}

// open opens a hub whose warnings and errors go to the test log.
func open(tb testing.TB, cfg server.Config) (*server.Hub, error) {
	log := slog.New(slog.NewTextHandler(testWriter{tb}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	return server.Open(context.Background(), cfg, log)
}

// run runs h until stop, which waits for it to end (and may be called
// more than once).
func run(tb testing.TB, h *server.Hub) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.Run(ctx) }()
	return sync.OnceFunc(func() {
		cancel()
		if err := <-done; err != nil {
			tb.Errorf("hub stopped with %v", err)
		}
	})
}

type testWriter struct{ tb testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.tb.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
