package main

import (
	"github.com/xiaozhi-hub/hub/sim"
	"sync/atomic"
	"time"
)

// runReadiness connects N devices at once to a fresh hub (empty cache) and
// times them until the hub has cached every device's tools.
func runReadiness(e *env) (*ReadinessResult, error) {
	ctx, n := e.ctx, e.opts.readyDevices
	h, err := e.hub("readiness")
	if err != nil {
		return nil, err
	}
	defer h.stop()
	var hello samples
	var start time.Time
	var lastHello atomic.Int64 // since start, of the latest first hello
	l, err := e.load(h, "", func(c *sim.LoadConfig) {
		c.OnConnect = func(_ int, took time.Duration) {
			hello.add(took)
			at := int64(time.Since(start))
			for {
				old := lastHello.Load()
				if at <= old || lastHello.CompareAndSwap(old, at) {
					break
				}
			}
		}
	})
	if err != nil {
		return nil, err
	}
	defer l.Stop()
	m0, err := h.metrics(ctx)
	if err != nil {
		return nil, err
	}
	time.Sleep(500 * time.Millisecond) // let the fresh hub settle
	e.progress("readiness: %d devices (%s) connect at once", n, e.opts.profile)
	e.prof.start(ctx, h, "readiness")
	cpu0, self0 := h.cpu(), selfCPU()
	start = time.Now()
	if err := l.Start(ctx, n); err != nil {
		return nil, err
	}
	done, err := waitFor(ctx, 120*time.Second, 10*time.Millisecond, "all tools cached", func() (bool, error) {
		_, disc, err := h.state(ctx)
		return err == nil && disc >= int64(n), err
	})
	cpu, self := h.cpu()-cpu0, selfCPU()-self0
	e.prof.stop(ctx, h)
	if err != nil {
		return nil, err
	}
	m1, err := h.metrics(ctx)
	if err != nil {
		return nil, err
	}
	all := done.Sub(start)
	hist := subtract(m1.histogram("xiaozhi_hub_discovery_duration_seconds", "outcome", "ok"),
		m0.histogram("xiaozhi_hub_discovery_duration_seconds", "outcome", "ok"))
	res := &ReadinessResult{
		Devices: n, Profile: e.opts.profile,
		AllConnected:     time.Duration(lastHello.Load()).Seconds(),
		AllCached:        all.Seconds(),
		DevicesPerSec:    float64(n) / all.Seconds(),
		HelloToCachedP50: bucketQuantile(hist, .5) * 1000,
		HelloToCachedP99: bucketQuantile(hist, .99) * 1000,
		ConnectToHello:   summarize(hello.sorted()),
		ConnectFailures:  l.Stats().Failures,
		HubCPU:           cpu.Seconds(),
		HubCPUPerDevice:  cpu.Seconds() / float64(n) * 1e6,
		GenCPUPerDevice:  self.Seconds() / float64(n) * 1e6,
	}
	if devs := l.Devices(); len(devs) > 0 {
		res.ToolCount = len(devs[0].ToolNames())
	}
	e.progress("readiness: all %d cached after %.2f s", n, all.Seconds())
	return res, nil
}
