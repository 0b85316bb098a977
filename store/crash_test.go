package store_test

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/store"
)

// A second Store on the same file, opened while the first was never closed
// (as after a crash), sees everything the first committed.
func TestSecondStoreSeesCommittedWrites(t *testing.T) {
	ctx := context.Background()
	path := tempDB(t)
	first := openStore(t, path, store.Options{})
	h, tools := toolList(1)
	if err := first.SaveDevice(ctx, fullDevice("c1")); err != nil {
		t.Fatal(err)
	}
	if err := first.SaveTools(ctx, "c1", h, tools); err != nil {
		t.Fatal(err)
	}
	if _, err := first.AddCall(ctx, hub.CallRecord{DeviceID: "c1", Tool: "x"}); err != nil {
		t.Fatal(err)
	}

	second := openStore(t, path, store.Options{})
	got := loadAll(t, second)
	if sn := got["c1"]; sn.Device.Board != "esp-box-3" || sn.ToolsHash != h || len(sn.Tools) != len(tools) {
		t.Fatalf("second store sees %+v", got)
	}
	if calls, err := second.Calls(ctx, hub.CallFilter{}); err != nil || len(calls) != 1 {
		t.Fatalf("second store calls: %v, %v", calls, err)
	}
	// Both can write; SQLite serialises the two writers (busy_timeout).
	if err := second.SaveDevice(ctx, hub.Device{ID: "c2"}); err != nil {
		t.Fatal(err)
	}
	if err := first.SaveDevice(ctx, hub.Device{ID: "c3"}); err != nil {
		t.Fatal(err)
	}
	if got := loadAll(t, first); len(got) != 3 {
		t.Fatalf("first store sees %d devices, want 3", len(got))
	}
}

const killEnv = "XIAOZHI_STORE_KILL9_DB"

// TestKill9Helper is the process TestSurvivesKill9 kills.
func TestKill9Helper(t *testing.T) {
	path := os.Getenv(killEnv)
	if path == "" {
		t.Skip("helper process for TestSurvivesKill9")
	}
	ctx := context.Background()
	s, err := store.Open(ctx, path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	h, tools := toolList(1)
	for i := range 100 {
		id := fmt.Sprintf("k%03d", i)
		if err := s.SaveDevice(ctx, fullDevice(id)); err != nil {
			t.Fatal(err)
		}
		if err := s.SaveTools(ctx, id, h, tools); err != nil {
			t.Fatal(err)
		}
	}
	fmt.Println("committed")
	time.Sleep(time.Minute) // killed long before
}

// Writes that returned survive kill -9 of the process (WAL, synchronous=NORMAL).
func TestSurvivesKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a process")
	}
	path := tempDB(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestKill9Helper$")
	cmd.Env = append(os.Environ(), killEnv+"="+path)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	committed := false
	for !committed && sc.Scan() {
		committed = strings.TrimSpace(sc.Text()) == "committed"
	}
	if err := cmd.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if !committed {
		t.Fatal("helper process did not report its writes")
	}
	if _, err := os.Stat(path + "-wal"); err != nil {
		t.Logf("no WAL file left behind: %v", err)
	}

	s := openStore(t, path, store.Options{})
	got := loadAll(t, s)
	h, _ := toolList(1)
	if len(got) != 100 {
		t.Fatalf("after kill -9: %d devices, want 100", len(got))
	}
	if sn := got["k099"]; sn.ToolsHash != h || sn.Device.Firmware != "2.0.4" {
		t.Fatalf("after kill -9: %+v", sn)
	}
}

func TestNewerSchemaRefused(t *testing.T) {
	ctx := context.Background()
	path := tempDB(t)
	s, err := store.Open(ctx, path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SaveDevice(ctx, fullDevice("keep")); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	execSQL(t, path, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (999, '999_future.sql', 'x')`)

	s, err = store.Open(ctx, path, store.Options{})
	if err == nil {
		s.Close()
		t.Fatal("Open accepted a database from a newer version")
	}
	if !errors.Is(err, store.ErrNewerSchema) || !strings.Contains(err.Error(), "999") {
		t.Fatalf("Open: %v, want ErrNewerSchema naming migration 999", err)
	}
	t.Log(err)

	// Nothing was lost.
	execSQL(t, path, `DELETE FROM schema_migrations WHERE version = 999`)
	s2 := openStore(t, path, store.Options{})
	if got := loadAll(t, s2); got["keep"].Device.Board != "esp-box-3" {
		t.Fatalf("after refusal: %+v", got)
	}
}

func execSQL(t *testing.T, path, query string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(query); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}

// The checkpointer copies committed pages into the database file while the
// store is open (the writer itself never checkpoints).
func TestCheckpointerRuns(t *testing.T) {
	ctx := context.Background()
	path := tempDB(t)
	s := openStore(t, path, store.Options{})
	size := func() int64 {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	before := size()
	for i := range 300 { // 300 commits: several checkpoints are due
		if err := s.SaveDevice(ctx, fullDevice(fmt.Sprintf("ck-%03d", i))); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for size() <= before {
		if time.Now().After(deadline) {
			t.Fatalf("database file still %d bytes: no checkpoint", before)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
