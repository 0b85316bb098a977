package registry_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	dto "github.com/prometheus/client_model/go"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/metrics"
	"github.com/xiaozhi-hub/hub/registry"
	"github.com/xiaozhi-hub/hub/registry/registrytest"
	"github.com/xiaozhi-hub/hub/store"
)

// fullStore is a store whose call records cannot be written (a full disk).
type fullStore struct{ *store.Store }

func (s fullStore) Log(calls []hub.CallRecord, events []hub.Event, done func(error)) error {
	if len(calls) == 0 {
		return s.Store.Log(calls, events, done)
	}
	done(errors.New("database or disk is full")) // as the writer would
	return nil
}

// TestUnwrittenCallRecordsAreCounted: a call whose record the store fails
// to write still returns the device's answer, and the lost record shows in
// xiaozhi_hub_records_dropped_total.
func TestUnwrittenCallRecordsAreCounted(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "hub.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	m := metrics.New()
	reg := registry.New(fullStore{st}, registry.Options{Metrics: m})
	defer reg.Close()
	if err := reg.Load(ctx); err != nil {
		t.Fatal(err)
	}
	l := reg.Connect(registry.ConnectInfo{DeviceID: "d1", MCP: true}, registrytest.NewConn("d1"))
	if _, err := l.SetTools(ctx, []hub.Tool{{Name: "t", InputSchema: []byte(`{"type":"object"}`)}}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := reg.CallTool(ctx, registry.CallRequest{DeviceID: "d1", Tool: "t"}); err != nil {
			t.Fatalf("call: %v", err)
		}
	}
	// The call returns once its record is written or given up on.
	var got dto.Metric
	if err := m.RecordsDropped.Write(&got); err != nil {
		t.Fatal(err)
	}
	if n := got.GetCounter().GetValue(); n != 3 {
		t.Errorf("records dropped: %v, want 3", n)
	}
}
