package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/store"
)

func TestCallsRoundTripAndPruning(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, tempDB(t), store.Options{MaxCalls: 10})
	start := time.Date(2025, 3, 1, 12, 0, 0, 123456789, time.Local)
	var ids []int64
	for i := range 25 {
		c := hub.CallRecord{
			DeviceID: fmt.Sprintf("d%d", i%2), Kind: "mcp", Tool: "self.reboot",
			Caller: "api", Arguments: `{"a":1}`, Result: `{"content":[]}`, Outcome: hub.OutcomeOK,
			Started: start.Add(time.Duration(i) * time.Second), DurationMs: 12.5,
		}
		id, err := s.AddCall(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		if len(ids) > 0 && id <= ids[len(ids)-1] {
			t.Fatalf("id %d after %d", id, ids[len(ids)-1])
		}
		ids = append(ids, id)
	}
	all, err := s.Calls(ctx, hub.CallFilter{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 10 {
		t.Fatalf("kept %d calls, want 10", len(all))
	}
	for i, c := range all {
		if c.ID != ids[24-i] {
			t.Fatalf("calls[%d].ID = %d, want %d (newest first)", i, c.ID, ids[24-i])
		}
	}
	want := hub.CallRecord{ID: ids[24], DeviceID: "d0", Kind: "mcp", Tool: "self.reboot", Caller: "api",
		Arguments: `{"a":1}`, Result: `{"content":[]}`, Outcome: hub.OutcomeOK,
		Started: start.Add(24 * time.Second).UTC(), DurationMs: 12.5}
	if !reflect.DeepEqual(all[0], want) {
		t.Errorf("newest call:\n got %+v\nwant %+v", all[0], want)
	}
	d1, err := s.Calls(ctx, hub.CallFilter{DeviceID: "d1", Limit: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(d1) != 3 || d1[0].ID != ids[23] || d1[2].ID != ids[19] {
		t.Errorf("d1 calls: %+v", d1)
	}
	none, err := s.Calls(ctx, hub.CallFilter{DeviceID: "nobody"})
	if err != nil || none == nil || len(none) != 0 {
		t.Errorf("calls of unknown device: %v, %v; want empty, non-nil", none, err)
	}
}

func TestEventsRoundTripAndPruning(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, tempDB(t), store.Options{MaxEvents: 5})
	at := time.Date(2025, 3, 1, 12, 0, 0, 1, time.UTC)
	data := map[string]any{"tools": []string{"a", "b"}, "n": 3}
	for i := range 12 {
		e := hub.Event{Type: hub.EventToolsChanged, DeviceID: fmt.Sprintf("d%d", i%3), Time: at.Add(time.Duration(i)), Data: data}
		if i == 11 {
			e = hub.Event{Type: hub.EventOnline, Time: at}
		}
		if err := s.AddEvent(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	events, err := s.Events(ctx, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 5 {
		t.Fatalf("kept %d events, want 5", len(events))
	}
	if e := events[0]; e.Type != hub.EventOnline || e.DeviceID != "" || e.Data != nil || !e.Time.Equal(at) {
		t.Errorf("newest event: %+v", e)
	}
	e := events[1]
	if e.Type != hub.EventToolsChanged || e.DeviceID != "d1" || e.Time != at.Add(10) {
		t.Errorf("second event: %+v", e)
	}
	got, _ := json.Marshal(e)
	want, _ := json.Marshal(hub.Event{Type: hub.EventToolsChanged, DeviceID: "d1", Time: at.Add(10), Data: data})
	if string(got) != string(want) {
		t.Errorf("event re-encodes as\n%s\nwant\n%s", got, want)
	}
	d1, err := s.Events(ctx, "d1", 1)
	if err != nil || len(d1) != 1 || d1[0].Time != at.Add(10) {
		t.Errorf("d1 events: %+v, %v", d1, err)
	}
}

func TestReopenKeepsEverything(t *testing.T) {
	ctx := context.Background()
	path := tempDB(t)
	s, err := store.Open(ctx, path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	h, tools := toolList(1)
	if err := s.SaveDevice(ctx, fullDevice("r1")); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveTools(ctx, "r1", h, tools); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveThing(ctx, "r1", sampleThing("Lamp")); err != nil {
		t.Fatal(err)
	}
	id, err := s.AddCall(ctx, hub.CallRecord{DeviceID: "r1", Tool: "x", Started: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.AddEvent(ctx, hub.Event{Type: hub.EventOnline, DeviceID: "r1", Data: map[string]int{"v": 1}}); err != nil {
		t.Fatal(err)
	}
	before := loadAll(t, s)
	calls, _ := s.Calls(ctx, hub.CallFilter{})
	events, _ := s.Events(ctx, "", 0)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveDevice(ctx, fullDevice("late")); !errors.Is(err, store.ErrClosed) {
		t.Errorf("write after Close: %v, want ErrClosed", err)
	}

	s2 := openStore(t, path, store.Options{})
	if after := loadAll(t, s2); !reflect.DeepEqual(after, before) {
		t.Errorf("after reopen:\n got %+v\nwant %+v", after, before)
	}
	calls2, _ := s2.Calls(ctx, hub.CallFilter{})
	events2, _ := s2.Events(ctx, "", 0)
	if !reflect.DeepEqual(calls2, calls) || !reflect.DeepEqual(events2, events) {
		t.Errorf("logs after reopen: %+v %+v, want %+v %+v", calls2, events2, calls, events)
	}
	// Ids are not reused after reopening.
	id2, err := s2.AddCall(ctx, hub.CallRecord{DeviceID: "r1"})
	if err != nil || id2 <= id {
		t.Errorf("id after reopen %d (%v), want > %d", id2, err, id)
	}
}

func TestBatchesKeepTheirOrder(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, tempDB(t), store.Options{MaxCalls: 4, MaxEvents: 4})
	now := time.Now()
	var evs []hub.Event
	var calls []hub.CallRecord
	for i := range 6 {
		evs = append(evs, hub.Event{Type: fmt.Sprintf("e%d", i), DeviceID: "d", Time: now})
		calls = append(calls, hub.CallRecord{DeviceID: "d", Kind: "mcp", Tool: fmt.Sprintf("t%d", i), Started: now})
	}
	if err := s.AddEvents(ctx, evs); err != nil {
		t.Fatal(err)
	}
	if err := s.AddCalls(ctx, calls); err != nil {
		t.Fatal(err)
	}
	gotE, _ := s.Events(ctx, "", 10)
	gotC, _ := s.Calls(ctx, hub.CallFilter{})
	if len(gotE) != 4 || gotE[0].Type != "e5" || gotE[3].Type != "e2" {
		t.Fatalf("events newest first, bounded to 4: %+v", gotE)
	}
	if len(gotC) != 4 || gotC[0].Tool != "t5" || gotC[3].Tool != "t2" {
		t.Fatalf("calls newest first, bounded to 4: %+v", gotC)
	}
}

// TestCallIDsGivenByTheRegistry: records keep the ids they were given, and
// LastCallID counts pruned and deleted records too, also after reopening,
// so that numbering on from it never reuses an id.
func TestCallIDsGivenByTheRegistry(t *testing.T) {
	ctx := context.Background()
	path := tempDB(t)
	s := openStore(t, path, store.Options{MaxCalls: 3})
	if id, err := s.LastCallID(ctx); err != nil || id != 0 {
		t.Fatalf("LastCallID of an empty store: %d, %v", id, err)
	}
	var cs []hub.CallRecord
	for i := range 5 {
		cs = append(cs, hub.CallRecord{ID: int64(10 + i), DeviceID: "d1", Kind: "mcp", Tool: "t", Outcome: hub.OutcomeOK})
	}
	cs[3].ID, cs[4].ID = cs[4].ID, cs[3].ID // finished out of order
	if err := s.AddCalls(ctx, cs); err != nil {
		t.Fatal(err)
	}
	got, err := s.Calls(ctx, hub.CallFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if ids := fmt.Sprint(callIDs(got)); ids != "[14 13 12]" {
		t.Errorf("stored ids %s, want [14 13 12]", ids)
	}
	if err := s.DeleteDevice(ctx, "d1"); err != nil && hub.ErrorCode(err) != hub.ENOTFOUND {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, path, store.Options{})
	if id, err := s.LastCallID(ctx); err != nil || id != 14 {
		t.Errorf("LastCallID after pruning, deleting and reopening: %d, %v; want 14", id, err)
	}
}

func callIDs(cs []hub.CallRecord) []int64 {
	var ids []int64
	for _, c := range cs {
		ids = append(ids, c.ID)
	}
	return ids
}

// Other nodes' calls (a cluster's history) are kept apart from this node's:
// once per node and id however often they arrive, bounded like this node's,
// and without touching the ids the registry gives out.
func TestOtherNodesCallsAreKeptOnceAndBounded(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, tempDB(t), store.Options{MaxCalls: 5})
	start := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	logSync := func(calls []hub.CallRecord) {
		t.Helper()
		done := make(chan error, 1)
		if err := s.Log(calls, nil, func(err error) { done <- err }); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	peer := func(node string, id int64) hub.CallRecord {
		return hub.CallRecord{ID: id, Node: node, DeviceID: "d1", Kind: "mcp", Tool: "t", Caller: "api", Arguments: "{}",
			Result: "{}", Outcome: hub.OutcomeOK, Started: start.Add(time.Duration(id) * time.Second)}
	}
	logSync([]hub.CallRecord{peer("hub-2", 1), peer("hub-3", 1)})
	logSync([]hub.CallRecord{peer("hub-2", 1)}) // delivered again
	own := peer("", 0)
	own.ID = 1
	logSync([]hub.CallRecord{own})
	got, err := s.PeerCalls(ctx, hub.CallFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Node == got[1].Node {
		t.Fatalf("other nodes' calls: %+v; want hub-2's and hub-3's call 1 once each", got)
	}
	if mine, _ := s.Calls(ctx, hub.CallFilter{}); len(mine) != 1 || mine[0].ID != 1 || mine[0].Node != "" {
		t.Fatalf("this node's calls: %+v; want its own call 1 only", mine)
	}
	for id := int64(2); id <= 9; id++ {
		logSync([]hub.CallRecord{peer("hub-2", id)})
	}
	got, _ = s.PeerCalls(ctx, hub.CallFilter{Limit: 1000})
	if len(got) != 5 || got[0].ID != 9 || got[0].Node != "hub-2" {
		t.Fatalf("after 10 other nodes' calls with max-calls 5: %d kept, newest %+v", len(got), got[0])
	}
}

// The newest history position copied is committed with the records, kept
// across a reopen, never moves back, and is forgotten for a stream made
// again.
func TestHistoryPositionIsCommittedWithTheRecords(t *testing.T) {
	ctx := context.Background()
	path := tempDB(t)
	s := openStore(t, path, store.Options{})
	logCopied := func(stream string, seq uint64) {
		t.Helper()
		done := make(chan error, 1)
		ev := hub.Event{Type: hub.EventDeviceUpdated, DeviceID: "d1", Node: "hub-2", Time: time.Now()}
		if err := s.LogCopied(stream, seq, nil, []hub.Event{ev}, func(err error) { done <- err }); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	copied := func(s *store.Store, stream string) uint64 {
		t.Helper()
		seq, err := s.HistoryCopied(ctx, stream)
		if err != nil {
			t.Fatal(err)
		}
		return seq
	}
	if got := copied(s, "h@1"); got != 0 {
		t.Fatalf("a new store has copied up to %d, want 0", got)
	}
	logCopied("h@1", 7)
	logCopied("h@1", 5) // an older message, late: the position stays
	if got := copied(s, "h@1"); got != 7 {
		t.Fatalf("copied up to %d, want 7", got)
	}
	if err := s.LogCopied("", 3, nil, nil, nil); err == nil {
		t.Fatal("LogCopied without a stream was taken")
	}
	s.Close()
	s = openStore(t, path, store.Options{})
	if got := copied(s, "h@1"); got != 7 {
		t.Fatalf("after a reopen, copied up to %d, want 7", got)
	}
	logCopied("h@2", 1) // the stream was made again
	if a, b := copied(s, "h@1"), copied(s, "h@2"); a != 0 || b != 1 {
		t.Fatalf("after the stream was made again: old %d, new %d; want 0 and 1", a, b)
	}
	if es, _ := s.Events(ctx, "d1", 100); len(es) != 3 {
		t.Fatalf("%d events stored, want the 3 copied", len(es))
	}
}
