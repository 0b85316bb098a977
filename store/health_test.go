package store_test

import (
	"context"
	"strings"
	"testing"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/store"
)

// TestHealthReportsFailingWrites: when writes fail (here: the database may
// not grow, as on a full disk) while reads still work, Health says so and
// names the failure.
func TestHealthReportsFailingWrites(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, tempDB(t), store.Options{})
	if err := s.Health(ctx); err != nil {
		t.Fatalf("healthy store: %v", err)
	}
	if err := s.LimitPages(ctx); err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("x", 64<<10)
	var werr error
	for i := 0; i < 100 && werr == nil; i++ {
		werr = s.AddCalls(ctx, []hub.CallRecord{{DeviceID: "d1", Kind: "mcp", Tool: "t", Result: big, Outcome: hub.OutcomeOK}})
	}
	if werr == nil {
		t.Fatal("writes never failed")
	}
	if err := s.Ping(ctx); err != nil {
		t.Fatalf("reads fail too: %v", err)
	}
	err := s.Health(ctx)
	if err == nil || !strings.Contains(err.Error(), "full") || !strings.Contains(err.Error(), "writes are failing") {
		t.Errorf("Health after a failed write: %v", err)
	}
}
