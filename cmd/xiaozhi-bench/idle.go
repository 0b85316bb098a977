package main

import (
	"context"
	"fmt"
	"time"
)

// runIdle connects devices in steps and measures the hub's footprint at
// each step, after a forced GC, against its footprint with no device.
func runIdle(e *env) (*IdleResult, error) {
	ctx := e.ctx
	h, err := e.hub("idle")
	if err != nil {
		return nil, err
	}
	defer h.stop()
	time.Sleep(time.Second)
	base, err := footprint(ctx, h, 0, nil)
	if err != nil {
		return nil, err
	}
	res := &IdleResult{Profile: e.opts.profile, Baseline: base}
	l, err := e.load(h, "", nil)
	if err != nil {
		return nil, err
	}
	defer l.Stop()
	cur := 0
	for _, n := range e.opts.idleSteps {
		e.progress("idle: %d devices", n)
		if err := l.Start(ctx, n-cur); err != nil {
			return res, err
		}
		cur = n
		if err := e.waitReady(h, n, 120*time.Second); err != nil {
			return res, err
		}
		time.Sleep(3 * time.Second) // idle, as an operator would look
		st, err := footprint(ctx, h, n, &base)
		if err != nil {
			return res, err
		}
		res.Steps = append(res.Steps, st)
		e.progress("idle: %d devices: unforced RSS %s (%.1f KB/device), heap %s (%.1f KB/device), stacks %s; after GC RSS %s (%.1f KB/device), heap %s (%.1f KB/device), stacks %.1f KB/device, %d goroutines",
			n, mib(st.RSSUnforced), st.RSSPerDeviceUnf, mib(st.HeapUnforced), st.HeapPerDeviceUnf, mib(st.StackUnforced),
			mib(st.RSS), st.RSSPerDevice, mib(st.HeapInuse), st.HeapPerDevice, st.StackPerDevice, st.Goroutines)
	}
	e.prof.snapshot(ctx, h, fmt.Sprintf("idle-%d", cur), "heap")
	return res, nil
}

// footprint reads the hub's RSS and Go heap in use as they are, then
// forces a GC in the hub (returning freed memory to the OS) and reads its
// RSS, Go heap in use and goroutines again; per device against base.
func footprint(ctx context.Context, h *hubProc, n int, base *IdleStep) (IdleStep, error) {
	before, err := h.metrics(ctx)
	if err != nil {
		return IdleStep{}, err
	}
	rssUnforced := h.rss()
	if err := h.control(ctx, "/bench/gc", nil); err != nil {
		return IdleStep{}, err
	}
	time.Sleep(300 * time.Millisecond)
	ms, err := h.metrics(ctx)
	if err != nil {
		return IdleStep{}, err
	}
	st := IdleStep{
		Devices:       n,
		RSSUnforced:   rssUnforced,
		HeapUnforced:  int64(before.get("go_memstats_heap_inuse_bytes")),
		StackUnforced: int64(before.get("go_memstats_stack_inuse_bytes")),
		RSS:           h.rss(),
		HeapInuse:     int64(ms.get("go_memstats_heap_inuse_bytes")),
		StackInuse:    int64(ms.get("go_memstats_stack_inuse_bytes")),
		Goroutines:    int(ms.get("go_goroutines")),
	}
	if base != nil && n > 0 {
		st.RSSPerDeviceUnf = float64(st.RSSUnforced-base.RSSUnforced) / float64(n) / 1024
		st.HeapPerDeviceUnf = float64(st.HeapUnforced-base.HeapUnforced) / float64(n) / 1024
		st.RSSPerDevice = float64(st.RSS-base.RSS) / float64(n) / 1024
		st.HeapPerDevice = float64(st.HeapInuse-base.HeapInuse) / float64(n) / 1024
		st.StackPerDevice = float64(st.StackInuse-base.StackInuse) / float64(n) / 1024
		st.GoroutinesPerDev = float64(st.Goroutines-base.Goroutines) / float64(n)
	}
	return st, nil
}
