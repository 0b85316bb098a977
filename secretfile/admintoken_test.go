package secretfile_test

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xiaozhi-hub/hub/secretfile"
)

// The admin token is the configured one, or the one kept in its file,
// made on first start and the same on every start after; a token shorter
// than 16 characters is refused either way, saying what to do.
func TestAdminToken(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	path := filepath.Join(t.TempDir(), "api-token")
	if tok, created, err := secretfile.AdminToken("a-configured-token", path, log); err != nil || tok != "a-configured-token" || created {
		t.Fatalf("configured token: %q, %v", tok, err)
	}
	if _, err := os.Stat(path); err == nil {
		t.Fatal("a configured token wrote the token file")
	}
	if _, _, err := secretfile.AdminToken("short", path, log); err == nil || !strings.Contains(err.Error(), "api-token: use at least 16 characters") {
		t.Fatalf("short configured token: %v", err)
	}
	first, created, err := secretfile.AdminToken("", path, log)
	if err != nil || len(first) < 16 || !created {
		t.Fatalf("generated token %q, %v", first, err)
	}
	if again, created, err := secretfile.AdminToken("", path, log); err != nil || again != first || created {
		t.Fatalf("second start: %q, %v; want the first token %q", again, err, first)
	}
	os.WriteFile(path, []byte("short\n"), 0o600)
	if _, _, err := secretfile.AdminToken("", path, log); err == nil || !strings.Contains(err.Error(), "delete it to generate a new one") {
		t.Fatalf("short token file: %v", err)
	}
}
