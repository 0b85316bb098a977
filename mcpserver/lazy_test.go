package mcpserver

import (
	"net/http/httptest"
	"testing"
	"time"

	ct "github.com/xiaozhi-hub/hub/catalog/catalogtest"
)

// With no MCP client connected, device changes do not build the catalog
// (its search index costs memory per device); the next request does.
func TestNoCatalogWithoutClients(t *testing.T) {
	reg, _ := ct.NewHome(t, ct.Home()[:3])
	s := New(reg, Options{Debounce: time.Millisecond})
	defer s.Close()
	time.Sleep(50 * time.Millisecond) // room for debounced syncs, if any were to run
	s.mu.Lock()
	n := len(s.exposed)
	s.mu.Unlock()
	if n != 0 || !s.stale.Load() {
		t.Fatalf("without clients: %d tools exposed, stale=%v; want 0 and stale", n, s.stale.Load())
	}
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest("GET", "/mcp", nil)) // any request brings the tools up to date
	s.mu.Lock()
	n = len(s.exposed)
	s.mu.Unlock()
	if n == 0 || s.stale.Load() {
		t.Fatalf("after a request: %d tools exposed, stale=%v", n, s.stale.Load())
	}
}
