package server_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/xiaozhi-hub/hub/sim"
)

// TestHealthzReportsFailingWrites: while the database refuses writes (here
// another process holds its write lock beyond the hub's 10 s busy
// timeout), /healthz answers 503 naming the failure, not "ok".
func TestHealthzReportsFailingWrites(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for SQLite's 10 s busy timeout")
	}
	h := startHub(t, "", nil)
	if st, body := callURL(t, "", "GET", h.URL()+"/healthz"); st != 200 {
		t.Fatalf("healthz of a fresh hub: %d %v", st, body)
	}
	d := h.device(sim.Config{DeviceID: "aa:00:00:00:0d:01"})
	h.readyTools(d.ID())
	db, err := sql.Open("sqlite", filepath.Join(h.dir, "hub.db")+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	defer conn.ExecContext(ctx, "ROLLBACK")

	if st, body := h.call("PATCH", "/api/devices/"+d.ID(), map[string]any{"name": "x"}); st == 200 {
		t.Fatalf("a write succeeded while the database was locked: %v", body)
	}
	st, body := callURL(t, "", "GET", h.URL()+"/healthz")
	if msg, _ := body["error"].(string); st != 503 || !strings.Contains(msg, "writes are failing") || !strings.Contains(msg, "locked") {
		t.Errorf("healthz while writes fail: %d %v", st, body)
	}
}
