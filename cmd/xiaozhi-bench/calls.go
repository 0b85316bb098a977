package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/xiaozhi-hub/hub/sim"
)

// runCalls connects the call devices and drives tool calls through the
// REST API (closed loop at a concurrency, open loop at an offered rate),
// then through the MCP endpoint when the hub serves one.
func runCalls(e *env) (*CallsResult, error) {
	ctx, n := e.ctx, e.opts.callDevices
	h, err := e.hub("calls")
	if err != nil {
		return nil, err
	}
	defer h.stop()
	l, err := e.load(h, "", nil)
	if err != nil {
		return nil, err
	}
	defer l.Stop()
	e.progress("calls: connecting %d devices", n)
	if err := l.Start(ctx, n); err != nil {
		return nil, err
	}
	if err := e.waitReady(h, n, 120*time.Second); err != nil {
		return nil, err
	}
	ids := deviceIDs(l)
	res := &CallsResult{Devices: n, Tool: callTool}

	rc := newRESTCaller(h, ids, 2*e.opts.concurrency)
	defer rc.close()
	if err := rc.call(ctx, 0); err != nil {
		return nil, fmt.Errorf("first REST call: %w", err)
	}
	res.REST, res.RESTOpen, err = e.callPhases(h, "rest", "REST", rc.call)
	if err != nil {
		return res, err
	}
	for _, rate := range e.opts.moreRates {
		run, err := e.openPhase(h, "rest", "REST", rate, rc.call)
		if err != nil {
			return res, err
		}
		res.RESTOpenMore = append(res.RESTOpenMore, run)
	}

	if e.opts.mcp == "off" {
		res.MCPNote = "skipped (--mcp off)"
		return res, nil
	}
	mc, note, err := newMCPCaller(ctx, h, ids, e.opts.concurrency)
	switch {
	case err != nil:
		res.MCPNote = "not measured: " + err.Error()
		e.note("MCP call path: %v", err)
		return res, nil
	case mc == nil:
		res.MCPNote = note
		e.note("MCP call path: %s", note)
		return res, nil
	}
	defer mc.close()
	res.MCP, res.MCPOpen, err = e.callPhases(h, "mcp", "MCP call_device_tool", mc.call)
	return res, err
}

func deviceIDs(l *sim.Load) []string {
	devs := l.Devices()
	ids := make([]string, len(devs))
	for i, d := range devs {
		ids[i] = d.ID()
	}
	return ids
}

// callPhases runs a warm-up, the closed loop and the open loop of one call
// path, each with the hub's CPU and the generator's CPU measured.
func (e *env) callPhases(h *hubProc, key, label string, call func(ctx context.Context, i int) error) (closed, open *CallRun, err error) {
	ctx, conc := e.ctx, e.opts.concurrency
	e.progress("calls: %s warm-up %v", label, e.opts.warmup)
	if _, errs, _, ferr := closedLoop(ctx, conc, e.opts.warmup, call); errs > 0 {
		return nil, nil, fmt.Errorf("%s warm-up: %d errors, first: %w", label, errs, ferr)
	}
	scrape := func() promSamples {
		ms, _ := h.metrics(ctx)
		return ms
	}
	e.progress("calls: %s closed loop, %d concurrent, %v", label, conc, e.opts.duration)
	before, hub0, self0 := scrape(), h.cpu(), selfCPU()
	e.prof.snapshot(ctx, h, "calls-"+key+"-closed-before", "allocs")
	e.prof.start(ctx, h, "calls-"+key+"-closed")
	sorted, errs, elapsed, ferr := closedLoop(ctx, conc, e.opts.duration, call)
	hubCPU, selfC := h.cpu()-hub0, selfCPU()-self0
	e.prof.stop(ctx, h)
	e.prof.snapshot(ctx, h, "calls-"+key+"-closed-after", "allocs")
	closed = newCallRun("closed", conc, 0, elapsed, sorted, errs)
	closed.cpu(hubCPU, selfC)
	addHubFigures(closed, before, scrape())
	e.series = append(e.series, series{fmt.Sprintf("%s, closed loop %d", label, conc), sorted})
	e.progress("calls: %s closed: %.0f calls/s, p50 %s, p99 %s, hub %.1f µs CPU/call, %.0f allocs/call, %d errors",
		label, closed.PerSec, msf(closed.Latency.P50), msf(closed.Latency.P99), closed.ServerCPUPerCall, closed.HubAllocs, errs)
	if ferr != nil {
		e.note("%s closed loop: first error: %v", label, ferr)
	}
	if e.opts.closedOnly {
		return closed, nil, nil
	}
	open, err = e.openPhase(h, key, label, e.opts.rate, call)
	return closed, open, err
}

// openPhase is one open-loop phase at rate calls per second.
func (e *env) openPhase(h *hubProc, key, label string, rate float64, call func(ctx context.Context, i int) error) (*CallRun, error) {
	ctx := e.ctx
	time.Sleep(500 * time.Millisecond)
	e.progress("calls: %s open loop, %.0f/s offered, %v", label, rate, e.opts.duration)
	before, err := h.metrics(ctx)
	if err != nil {
		return nil, err
	}
	hub0, self0 := h.cpu(), selfCPU()
	name := fmt.Sprintf("calls-%s-open", key)
	if rate != e.opts.rate {
		name = fmt.Sprintf("calls-%s-open-%.0f", key, rate)
	}
	e.prof.start(ctx, h, name)
	ostart := time.Now()
	osorted, oerrs, ferr := openLoop(ctx, rate, e.opts.duration, 8*e.opts.concurrency, call)
	oelapsed := time.Since(ostart) // until the last call finished
	hubCPU, selfC := h.cpu()-hub0, selfCPU()-self0
	e.prof.stop(ctx, h)
	open := newCallRun("open", 0, rate, oelapsed, osorted, oerrs)
	open.cpu(hubCPU, selfC)
	if after, err := h.metrics(ctx); err == nil {
		addHubFigures(open, before, after)
	}
	e.series = append(e.series, series{fmt.Sprintf("%s, open loop %.0f/s", label, rate), osorted})
	e.progress("calls: %s open: %.0f calls/s, p50 %s, p99 %s, hub %.1f µs CPU/call, %.0f allocs/call, %d errors",
		label, open.PerSec, msf(open.Latency.P50), msf(open.Latency.P99), open.ServerCPUPerCall, open.HubAllocs, oerrs)
	if ferr != nil {
		e.note("%s open loop at %.0f/s: first error: %v", label, rate, ferr)
	}
	return open, nil
}

// addHubFigures sets the hub's own latency percentiles and allocations per
// call from two scrapes of its /metrics around a phase.
func addHubFigures(run *CallRun, before, after promSamples) {
	hb := subtract(after.histogram("xiaozhi_hub_call_duration_seconds", "kind", "mcp"),
		before.histogram("xiaozhi_hub_call_duration_seconds", "kind", "mcp"))
	run.HubP50, run.HubP99 = bucketQuantile(hb, .5)*1000, bucketQuantile(hb, .99)*1000
	if run.Calls > 0 {
		run.HubAllocs = (after.get("go_memstats_mallocs_total") - before.get("go_memstats_mallocs_total")) / float64(run.Calls)
		run.HubAllocBytes = (after.get("go_memstats_alloc_bytes_total") - before.get("go_memstats_alloc_bytes_total")) / float64(run.Calls)
	}
}

// closedLoop runs conc workers, each making one call after another for d.
// Worker w makes calls w, w+conc, w+2·conc, … (the call spreads them over
// devices). Failed calls are counted, not timed.
func closedLoop(ctx context.Context, conc int, d time.Duration, call func(ctx context.Context, i int) error) ([]time.Duration, int, time.Duration, error) {
	var all samples
	var mu sync.Mutex
	errs := 0
	var first error
	var wg sync.WaitGroup
	start := time.Now()
	end := start.Add(d)
	for w := range conc {
		wg.Go(func() {
			local := make([]time.Duration, 0, 1024)
			for i := w; ctx.Err() == nil; i += conc {
				t := time.Now()
				if !t.Before(end) {
					break
				}
				if err := call(ctx, i); err != nil {
					mu.Lock()
					errs++
					if first == nil {
						first = err
					}
					mu.Unlock()
					continue
				}
				local = append(local, time.Since(t))
			}
			all.addAll(local)
		})
	}
	wg.Wait()
	return all.sorted(), errs, time.Since(start), first
}

// openLoop starts call i at start + i/rate whether or not earlier calls have
// finished, for d, and times each from its scheduled start. At most
// maxInFlight calls run at once; past that the schedule slips, and the wait
// counts in the latency of the calls that slipped (measured from their
// scheduled time, so there is no coordinated omission).
func openLoop(ctx context.Context, rate float64, d time.Duration, maxInFlight int, call func(ctx context.Context, i int) error) ([]time.Duration, int, error) {
	var all samples
	var mu sync.Mutex
	errs := 0
	var first error
	var wg sync.WaitGroup
	slots := make(chan struct{}, maxInFlight)
	i := 0
	schedule(ctx, time.Now(), rate, d, func(at time.Time) {
		k := i
		i++
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			if err := call(ctx, k); err != nil {
				mu.Lock()
				errs++
				if first == nil {
					first = err
				}
				mu.Unlock()
				return
			}
			all.add(time.Since(at))
		})
	})
	wg.Wait()
	return all.sorted(), errs, first
}

// restCaller calls the tool through POST /api/devices/{id}/tools/{tool}/call
// with a lean HTTP/1.1 client (see rawClient), one prepared request per
// device.
type restCaller struct {
	reqs   [][]byte
	client *rawClient
}

var callBody = []byte(`{"arguments":{"volume":30}}`)

func newRESTCaller(h *hubProc, ids []string, maxConns int) *restCaller {
	host := strings.TrimPrefix(h.base, "http://")
	rc := &restCaller{client: newRawClient(host, maxConns)}
	for _, id := range ids {
		rc.reqs = append(rc.reqs, postRequest(host, "/api/devices/"+id+"/tools/"+callTool+"/call", "Bearer "+h.token, callBody))
	}
	return rc
}

func (rc *restCaller) call(ctx context.Context, i int) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	status, body, err := rc.client.do(ctx, rc.reqs[i%len(rc.reqs)])
	if err != nil {
		return err
	}
	if status != http.StatusOK {
		return fmt.Errorf("HTTP %d: %s", status, bytes.TrimSpace(body))
	}
	if !bytes.Contains(body, []byte(`"isError":false`)) {
		return errors.New("tool failed: " + string(body))
	}
	return nil
}

func (rc *restCaller) close() { rc.client.close() }
