package server_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/server"
	"github.com/xiaozhi-hub/hub/server/servertest"
)

// TestSecondHubOnTheSameDataDirRefuses: a second hub on a data directory in
// use does not start (the two would serve diverging caches); it names the
// running one. Once that one stops, the directory is free again.
func TestSecondHubOnTheSameDataDirRefuses(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data") // the hub creates it
	h := startHub(t, dir, nil)

	cfg := server.DefaultConfig()
	cfg.Listen, cfg.DataDir, cfg.APIToken, cfg.DeviceAuth = "127.0.0.1:0", dir, servertest.Token, "open"
	second, err := server.Open(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err == nil {
		second.Close()
		t.Fatal("a second hub started on a data directory in use")
	}
	msg := err.Error()
	for _, want := range []string{dir, fmt.Sprintf("pid %d", os.Getpid()), h.Addr().String(), "--data-dir"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not mention %q", msg, want)
		}
	}
	if hub.ErrorCode(err) != hub.ECONFLICT {
		t.Errorf("error code %q, want %q", hub.ErrorCode(err), hub.ECONFLICT)
	}
	// The running hub is unaffected.
	if st, _ := h.call("GET", "/api/devices", nil); st != 200 {
		t.Errorf("the running hub answers %d", st)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o700 {
		t.Errorf("data directory created with mode %v, want drwx------", fi.Mode().Perm())
	}

	h.stop()
	startHub(t, dir, nil) // the lock went with the first hub
}
