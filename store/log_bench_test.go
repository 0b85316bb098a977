package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/store"
)

// BenchmarkAddCalls appends call records in batches of 256, as the
// registry's recorder does under load; one op is one record.
//
//	go test -run NONE -bench AddCalls ./store
func BenchmarkAddCalls(b *testing.B) {
	s := openStore(b, tempDB(b), store.Options{MaxCalls: 10000})
	ctx := context.Background()
	batch := make([]hub.CallRecord, 256)
	for i := range batch {
		batch[i] = hub.CallRecord{
			DeviceID: fmt.Sprintf("aa:bb:cc:00:%02x:%02x", i/256, i%256), Kind: "mcp",
			Tool: "self.audio_speaker.set_volume", Caller: "api", Arguments: `{"volume":30}`,
			Result: `[{"type":"text","text":"true"}]`, Outcome: hub.OutcomeOK, Started: time.Now(), DurationMs: 1.25,
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for done := 0; done < b.N; done += len(batch) {
		if err := s.AddCalls(ctx, batch[:min(len(batch), b.N-done)]); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAddEvents is BenchmarkAddCalls for events.
func BenchmarkAddEvents(b *testing.B) {
	s := openStore(b, tempDB(b), store.Options{})
	ctx := context.Background()
	batch := make([]hub.Event, 256)
	for i := range batch {
		batch[i] = hub.Event{Type: hub.EventOnline, DeviceID: fmt.Sprintf("aa:bb:cc:00:%02x:%02x", i/256, i%256),
			Time: time.Now(), Data: map[string]string{"reason": "connection dropped"}}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for done := 0; done < b.N; done += len(batch) {
		if err := s.AddEvents(ctx, batch[:min(len(batch), b.N-done)]); err != nil {
			b.Fatal(err)
		}
	}
}
