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
	stale := func() bool { return s.synced.Load() != reg.ToolsGeneration() }
	ct.Connect(t, reg, ct.Home()[3])  // a change while no client is connected
	time.Sleep(50 * time.Millisecond) // room for debounced syncs, if any were to run
	s.mu.Lock()
	n := len(s.exposed)
	s.mu.Unlock()
	if n != 0 || !stale() {
		t.Fatalf("without clients: %d tools exposed, stale=%v; want 0 and stale", n, stale())
	}
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest("GET", "/mcp", nil)) // any request brings the tools up to date
	s.mu.Lock()
	n = len(s.exposed)
	s.mu.Unlock()
	if n == 0 || stale() {
		t.Fatalf("after a request: %d tools exposed, stale=%v", n, stale())
	}
}
