package mcpserver

import (
	"net/http/httptest"
	"testing"
	"time"

	ct "github.com/xiaozhi-hub/hub/catalog/catalogtest"
)

// With no MCP client connected, device changes do not build any tool list
// (the catalog's search index costs memory per device); a session does.
func TestNoCatalogWithoutClients(t *testing.T) {
	reg, _ := ct.NewHome(t, ct.Home()[:3])
	s := New(reg, Options{Debounce: time.Millisecond})
	defer s.Close()
	s.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/mcp", nil)) // starts the watcher
	ct.Connect(t, reg, ct.Home()[3])                                             // a change while no client is connected
	time.Sleep(50 * time.Millisecond)                                            // room for debounced syncs, if any were to run
	if n := s.syncs.Load(); n != 0 {
		t.Fatalf("without clients: %d tool lists computed; want none", n)
	}
	ss := s.newSession(nil)
	if n := len(ss.exposed); n == 0 || s.syncs.Load() != 1 {
		t.Fatalf("a new session: %d tools exposed, %d lists computed", n, s.syncs.Load())
	}
}
