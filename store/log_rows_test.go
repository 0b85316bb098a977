package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/store"
)

// Records are inserted several per statement; counts that need every
// statement size must keep order, ids and the bound.
func TestAddCallsAndEventsInManyRowStatements(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, tempDB(t), store.Options{MaxCalls: 60, MaxEvents: 60})
	start := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	var calls []hub.CallRecord
	var events []hub.Event
	for i := range 77 { // 32 + 32 + 8 + 5 × 1
		at := start.Add(time.Duration(i) * time.Millisecond)
		calls = append(calls, hub.CallRecord{DeviceID: fmt.Sprintf("d%02d", i), Kind: "mcp", Tool: "t",
			Caller: "api", Arguments: "{}", Result: fmt.Sprintf("r%d", i), Outcome: hub.OutcomeOK, Started: at, DurationMs: float64(i)})
		events = append(events, hub.Event{Type: hub.EventOnline, DeviceID: fmt.Sprintf("d%02d", i), Time: at, Data: map[string]int{"i": i}})
	}
	if err := s.AddCalls(ctx, calls[:1]); err != nil {
		t.Fatal(err)
	}
	if err := s.AddCalls(ctx, calls[1:]); err != nil {
		t.Fatal(err)
	}
	if err := s.AddEvents(ctx, events); err != nil {
		t.Fatal(err)
	}
	got, err := s.Calls(ctx, hub.CallFilter{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 60 {
		t.Fatalf("%d calls kept, want 60", len(got))
	}
	for i, c := range got { // newest first
		want := calls[76-i]
		if c.DeviceID != want.DeviceID || c.Result != want.Result || !c.Started.Equal(want.Started) || c.DurationMs != want.DurationMs {
			t.Fatalf("call %d = %+v, want %+v", i, c, want)
		}
		if i > 0 && c.ID != got[i-1].ID-1 {
			t.Fatalf("ids %d then %d: not consecutive", got[i-1].ID, c.ID)
		}
	}
	evs, err := s.Events(ctx, "", 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 60 || evs[0].DeviceID != "d76" || evs[59].DeviceID != "d17" || string(evs[0].Data.(json.RawMessage)) != `{"i":76}` {
		t.Fatalf("%d events, newest %+v", len(evs), evs[0])
	}
}
