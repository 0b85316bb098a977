package store_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/store"
)

// parallelism gives b.RunParallel about 500 goroutines per GOMAXPROCS, like
// many devices connecting at once.
const parallelism = 500

func BenchmarkSaveDeviceConcurrent(b *testing.B) {
	s := openStore(b, tempDB(b), store.Options{})
	ctx := context.Background()
	var seq atomic.Int64
	b.SetParallelism(parallelism)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			d := fullDevice(fmt.Sprintf("dev-%08d", seq.Add(1)))
			if err := s.SaveDevice(ctx, d); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	reportBatches(b, s, int64(b.N))
}

func BenchmarkSaveToolsConcurrent(b *testing.B) {
	s := openStore(b, tempDB(b), store.Options{})
	ctx := context.Background()
	type list struct {
		hash  string
		tools []hub.Tool
	}
	var lists [8]list
	for i := range lists {
		lists[i].hash, lists[i].tools = toolList(i)
	}
	var seq atomic.Int64
	b.SetParallelism(parallelism)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			n := seq.Add(1)
			l := lists[n%int64(len(lists))]
			if err := s.SaveTools(ctx, fmt.Sprintf("dev-%08d", n), l.hash, l.tools); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	reportBatches(b, s, int64(b.N))
}

// BenchmarkConnectBurst: 10,000 devices connect at once; each saves its
// device row and then its tool list (8 firmware variants). One op is one
// whole burst, into a fresh database.
func BenchmarkConnectBurst(b *testing.B) {
	const devices = 10000
	ctx := context.Background()
	var lists [8]struct {
		hash  string
		tools []hub.Tool
	}
	for i := range lists {
		lists[i].hash, lists[i].tools = toolList(i)
	}
	b.ReportAllocs()
	var total time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		s := openStore(b, tempDB(b), store.Options{})
		start := make(chan struct{})
		var wg sync.WaitGroup
		for n := range devices {
			wg.Go(func() {
				<-start
				id := fmt.Sprintf("aa:bb:%08d", n)
				l := lists[n%len(lists)]
				if err := s.SaveDevice(ctx, fullDevice(id)); err != nil {
					b.Error(err)
					return
				}
				if err := s.SaveTools(ctx, id, l.hash, l.tools); err != nil {
					b.Error(err)
				}
			})
		}
		b.StartTimer()
		t0 := time.Now()
		close(start)
		wg.Wait()
		total += time.Since(t0)
		b.StopTimer()
		reportBatches(b, s, 2*devices)
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms/burst")
}

func reportBatches(b *testing.B, s *store.Store, ops int64) {
	st := s.Stats()
	if st.Batches > 0 {
		b.ReportMetric(float64(ops)/float64(st.Batches), "ops/txn")
	}
}

// BenchmarkTurnReads is what a spoken turn reads (persona.Service.Prompt):
// the device's persona, its home's, and its memory.
func BenchmarkTurnReads(b *testing.B) {
	s := openStore(b, tempDB(b), store.Options{})
	ctx := context.Background()
	if err := s.SavePersona(ctx, "home", "h1", hub.Persona{Name: "Xiaozhi", Role: "a friendly assistant", Updated: time.Now()}); err != nil {
		b.Fatal(err)
	}
	if err := s.SaveMemory(ctx, hub.Memory{Device: "dev-1", Text: "likes jazz", Updated: time.Now()}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Persona(ctx, "device", "dev-1"); err != nil {
			b.Fatal(err)
		}
		if _, err := s.Persona(ctx, "home", "h1"); err != nil {
			b.Fatal(err)
		}
		if m, err := s.Memory(ctx, "dev-1"); err != nil || m.Text == "" {
			b.Fatal(m, err)
		}
	}
}
