package store_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/store"
)

// TestDatabaseFilesOwnerOnly: the database (call arguments and results) and
// its WAL and shared-memory files are readable by their owner only, also
// when an older version left them 0644, whatever the umask.
func TestDatabaseFilesOwnerOnly(t *testing.T) {
	ctx := context.Background()
	check := func(path string) {
		t.Helper()
		for _, p := range []string{path, path + "-wal", path + "-shm"} {
			fi, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm() != 0o600 {
				t.Errorf("%s has mode %v, want -rw-------", filepath.Base(p), fi.Mode().Perm())
			}
		}
	}
	write := func(s *store.Store) {
		t.Helper()
		if err := s.AddCalls(ctx, []hub.CallRecord{{DeviceID: "d1", Kind: "mcp", Tool: "t", Outcome: hub.OutcomeOK}}); err != nil {
			t.Fatal(err)
		}
	}

	path := tempDB(t)
	s := openStore(t, path, store.Options{})
	write(s)
	check(path) // while open: the WAL and shm files exist

	// A database an older hub created 0644 (files left as after kill -9).
	old := tempDB(t)
	s2 := openStore(t, old, store.Options{})
	write(s2)
	for _, p := range []string{old, old + "-wal", old + "-shm"} {
		if err := os.Chmod(p, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s3 := openStore(t, old, store.Options{})
	write(s3)
	check(old)
}
