// Package memlimit applies the hub's memory-limit setting to the Go
// runtime: a fixed soft limit, none, or one that follows what the process
// holds ("auto").
package memlimit

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"time"
)

// The setting. The Go runtime collects garbage when the heap
// has grown by GOGC (100 %) since the last collection, and gives freed
// memory back to the operating system slowly. A hub that has just accepted
// thousands of connections therefore sits, idle, at about twice the memory
// it holds: set-up garbage nobody collects (no allocation, no collection)
// and freed pages it keeps. A memory limit (debug.SetMemoryLimit) makes the
// runtime collect and return pages before the process exceeds it.
//
// "auto" sets the limit from what the hub holds (live heap after the last
// collection, goroutine stacks and runtime metadata), re-read every
// tick, never below floor. A busy hub (a collection finished in
// the last settle) gets busyFactor times that: about what GOGC allows
// anyway, so calls and connection storms pay for no extra collections. A
// settled hub (no collection for settle: nothing much allocates) gets
// settledFactor times: at its next allocation the runtime collects what a
// burst left behind, once, and it returns freed pages to stay under. The limit follows what is
// held, so it never makes the runtime collect back to back (it would then
// spend up to half the CPU on it).
const (
	floor         = 32 << 20
	busyFactor    = 2.0
	settledFactor = 1.2
	tick          = 500 * time.Millisecond
	settle        = 2 * tick
)

// Parse reads a memory-limit setting: "auto", "off", or a size
// in bytes with an optional unit (KiB, MiB, GiB, KB, MB, GB).
func Parse(s string) (fixed int64, auto bool, err error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "auto":
		return 0, true, nil
	case "off", "0":
		return 0, false, nil
	}
	num := strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"B", 1}} {
		if rest, ok := strings.CutSuffix(num, u.suffix); ok {
			num, mult = strings.TrimSpace(rest), u.mult
			break
		}
	}
	n, err := strconv.ParseFloat(num, 64)
	if err != nil || n <= 0 || n*float64(mult) > math.MaxInt64 {
		return 0, false, fmt.Errorf("memory-limit: %q is not auto, off or a size such as 512MiB or 2GiB", s)
	}
	fixed = int64(n * float64(mult))
	if fixed < 32<<20 {
		return 0, false, fmt.Errorf("memory-limit: %s is below 32MiB, too little for the hub to start", s)
	}
	return fixed, false, nil
}

// Run applies the memory-limit setting (see above) to this process until
// ctx ends. The limit is process-wide: only the owner of a process
// (the xiaozhi-hub command, the benchmark's hub) calls it, not every Hub.
// A GOMEMLIMIT in the environment wins over "auto".
func Run(ctx context.Context, setting string, log *slog.Logger) error {
	fixed, auto, err := Parse(setting)
	if err != nil {
		return err
	}
	if fixed > 0 {
		debug.SetMemoryLimit(fixed)
		log.Info("memory limit", "bytes", fixed)
		return nil
	}
	if !auto || debug.SetMemoryLimit(-1) != math.MaxInt64 {
		return nil // off, or GOMEMLIMIT set
	}
	samples := []metrics.Sample{
		{Name: "/gc/cycles/total:gc-cycles"},
		{Name: "/gc/heap/live:bytes"},
		{Name: "/memory/classes/total:bytes"},
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/memory/classes/heap/unused:bytes"},
		{Name: "/memory/classes/heap/free:bytes"},
		{Name: "/memory/classes/heap/released:bytes"},
	}
	t := time.NewTicker(tick)
	defer t.Stop()
	defer debug.SetMemoryLimit(math.MaxInt64)
	var cycles uint64
	var quiet time.Duration // since the last collection finished
	for {
		metrics.Read(samples)
		v := func(i int) int64 { return int64(samples[i].Value.Uint64()) }
		if c := samples[0].Value.Uint64(); c != cycles {
			cycles, quiet = c, 0
		} else {
			quiet += tick
		}
		// Held: live objects, plus everything that is not heap objects or
		// free heap (stacks, runtime metadata).
		held := v(1) + v(2) - v(3) - v(4) - v(5) - v(6)
		headroom := busyFactor
		if quiet >= settle {
			headroom = settledFactor
		}
		debug.SetMemoryLimit(max(floor, int64(float64(held)*headroom)))
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
