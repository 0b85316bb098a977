package secretfile_test

import (
	"encoding/hex"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/xiaozhi-hub/hub/secretfile"
)

func TestLoad(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	path := filepath.Join(t.TempDir(), "secret")
	a, created, err := secretfile.Load(path, 24, log)
	if err != nil || !created {
		t.Fatalf("first load: %v created=%v", err, created)
	}
	if b, _ := hex.DecodeString(a); len(b) != 24 {
		t.Fatalf("secret %q is not 24 bytes of hex", a)
	}
	if info, _ := os.Stat(path); info.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, want 0600", info.Mode().Perm())
	}
	os.Chmod(path, 0o644)
	b, created, err := secretfile.Load(path, 24, log)
	if err != nil || created || b != a {
		t.Fatalf("second load: %q %v %v, want the same secret", b, created, err)
	}
	if info, _ := os.Stat(path); info.Mode().Perm() != 0o600 {
		t.Fatalf("a readable file must be set back to 0600, got %v", info.Mode().Perm())
	}
	// A person may put a token of their own in the file.
	os.WriteFile(path, []byte("  my own token \n"), 0o600)
	if c, _, _ := secretfile.Load(path, 24, log); c != "my own token" {
		t.Fatalf("own token = %q", c)
	}
}
