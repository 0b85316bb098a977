package mcpserver

import (
	"encoding/json"
	"testing"

	"github.com/xiaozhi-hub/hub/catalog"
	ct "github.com/xiaozhi-hub/hub/catalog/catalogtest"
)

// The SDK panics on a schema that is not an object; the server must not.
func TestAddToolGuardsSDKPanics(t *testing.T) {
	s := New(ct.NewRegistry(t), Options{})
	defer s.Close()
	ss := s.newSession(nil)
	err := s.add(ss, catalog.Tool{Name: "bad", InputSchema: json.RawMessage(`{"type":"string"}`)})
	if err == nil {
		t.Fatal("a string schema was accepted")
	}
	if err := s.add(ss, catalog.Tool{Name: "good", InputSchema: json.RawMessage(`{"type":"object"}`)}); err != nil {
		t.Fatal(err)
	}
}
