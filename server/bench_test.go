package server_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/xiaozhi-hub/hub/sim"
)

// BenchmarkReadiness measures how long devices take from connecting to
// having their tools cached in the hub, for one device and for many
// connecting at once. Devices run in the same process, sharing the CPU.
//
//	go test -run NONE -bench Readiness -benchtime 3x ./server
func BenchmarkReadiness(b *testing.B) {
	for _, n := range []int{1, 100, 1000} {
		b.Run(fmt.Sprintf("devices=%d", n), func(b *testing.B) { benchReadiness(b, n) })
	}
}

func benchReadiness(b *testing.B, n int) {
	var walls []time.Duration
	var hist *dto.Histogram // hello-to-cached, merged across iterations
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		h := startHub(b, b.TempDir(), nil)
		devs := make([]*sim.Device, n)
		for j := range devs {
			id, _ := sim.MAC("bb:00", j+1)
			devs[j] = sim.New(sim.Config{URL: h.DeviceURL(), DeviceID: id})
		}
		b.StartTimer()
		start := time.Now()
		var wg sync.WaitGroup
		for _, d := range devs {
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				if err := d.Connect(ctx); err != nil {
					b.Errorf("connect: %v", err)
				}
			})
		}
		wg.Wait()
		for ready := 0; ready < n; {
			ready = 0
			for _, dev := range h.Registry.Devices() {
				if dev.ToolCount > 0 && !dev.ToolsStale {
					ready++
				}
			}
			if ready < n {
				time.Sleep(time.Duration(n) * 2 * time.Microsecond) // finer for small fleets
			}
		}
		wall := time.Since(start)
		b.StopTimer()
		walls = append(walls, wall)
		hist = merge(hist, discoveryHistogram(b, h))
		for _, d := range devs {
			d.Close()
		}
		h.stop()
	}
	var sum time.Duration
	for _, w := range walls {
		sum += w
	}
	mean := sum / time.Duration(len(walls))
	b.ReportMetric(float64(mean.Microseconds())/1000, "ms-all-ready")
	b.ReportMetric(float64(n)/mean.Seconds(), "devices/s")
	b.ReportMetric(quantile(hist, 0.5)*1000, "ms-p50-hello-to-cached")
	b.ReportMetric(quantile(hist, 0.99)*1000, "ms-p99-hello-to-cached")
}

// discoveryHistogram returns the hub's own hello-to-tools-cached histogram.
func discoveryHistogram(b *testing.B, h *testHub) *dto.Histogram {
	mfs, err := h.Metrics.Registry.Gather()
	if err != nil {
		b.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "xiaozhi_hub_discovery_duration_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			if labelValue(m, "outcome") == "ok" {
				return m.GetHistogram()
			}
		}
	}
	return &dto.Histogram{}
}

// merge adds b's counts to a (same buckets).
func merge(a, b *dto.Histogram) *dto.Histogram {
	if a == nil {
		return b
	}
	n := a.GetSampleCount() + b.GetSampleCount()
	a.SampleCount = &n
	for i, bk := range b.GetBucket() {
		if i < len(a.Bucket) {
			c := a.Bucket[i].GetCumulativeCount() + bk.GetCumulativeCount()
			a.Bucket[i].CumulativeCount = &c
		}
	}
	return a
}

func labelValue(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// quantile estimates a quantile of h, linearly within a bucket.
func quantile(h *dto.Histogram, q float64) float64 {
	total := float64(h.GetSampleCount())
	rank := q * total
	prevBound, prevCount := 0.0, 0.0
	for _, bk := range h.GetBucket() {
		c := float64(bk.GetCumulativeCount())
		if c >= rank {
			if c == prevCount {
				return bk.GetUpperBound()
			}
			return prevBound + (bk.GetUpperBound()-prevBound)*(rank-prevCount)/(c-prevCount)
		}
		prevBound, prevCount = bk.GetUpperBound(), c
	}
	return prevBound
}
