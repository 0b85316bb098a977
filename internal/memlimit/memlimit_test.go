package memlimit

import (
	"context"
	"log/slog"
	"math"
	"runtime/debug"
	"sync"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	for in, want := range map[string]struct {
		fixed int64
		auto  bool
	}{
		"": {0, true}, "auto": {0, true}, "AUTO": {0, true}, "off": {0, false}, "0": {0, false},
		"512MiB": {512 << 20, false}, "2GiB": {2 << 30, false}, "1.5 GiB": {3 << 29, false},
		"300MB": {300e6, false}, "100000000": {100e6, false},
	} {
		fixed, auto, err := Parse(in)
		if err != nil || fixed != want.fixed || auto != want.auto {
			t.Errorf("%q: %d %v %v, want %d %v", in, fixed, auto, err, want.fixed, want.auto)
		}
	}
	for _, bad := range []string{"lots", "-1GiB", "12MiB", "1TB", "1e30GiB"} {
		if _, _, err := Parse(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// With "auto" the runtime has a memory limit while the hub runs (so an idle
// hub gives back what a burst of connections left), none after.
func TestRunAuto(t *testing.T) {
	if debug.SetMemoryLimit(-1) != math.MaxInt64 {
		t.Skip("GOMEMLIMIT is set")
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { Run(ctx, "auto", slog.New(slog.DiscardHandler)) })
	deadline := time.Now().Add(10 * time.Second)
	for debug.SetMemoryLimit(-1) == math.MaxInt64 {
		if time.Now().After(deadline) {
			t.Fatal("auto set no memory limit")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if l := debug.SetMemoryLimit(-1); l < floor {
		t.Errorf("limit %d is below the floor", l)
	}
	cancel()
	wg.Wait()
	if l := debug.SetMemoryLimit(-1); l != math.MaxInt64 {
		t.Errorf("limit %d left behind", l)
	}

	if err := Run(context.Background(), "256MiB", slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	defer debug.SetMemoryLimit(math.MaxInt64)
	if l := debug.SetMemoryLimit(-1); l != 256<<20 {
		t.Errorf("fixed limit %d", l)
	}
}
