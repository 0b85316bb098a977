package server_test

import (
	"bytes"
	"context"
	"slices"
	"testing"
	"time"

	"github.com/xiaozhi-hub/hub/sim"
)

// BenchmarkDiscoveryDeviceSide measures discovery as a device sees it, one
// new device at a time: from starting the dial to receiving the hub's last
// tools/list request (the device answers it at once, and the hub then has
// the list in memory). The firmware profile fits its tools in one page.
// Reported: p50 and p90 over b.N devices, in ms.
func BenchmarkDiscoveryDeviceSide(b *testing.B) {
	h := startHub(b, b.TempDir(), nil)
	defer h.stop()
	var took []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		id, _ := sim.MAC("bd:00", i+1)
		listed := make(chan time.Time, 4)
		d := sim.New(sim.Config{URL: h.DeviceURL(), DeviceID: id, OnText: func(data []byte) {
			if bytes.Contains(data, []byte(`"tools/list"`)) {
				select {
				case listed <- time.Now():
				default:
				}
			}
		}})
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		start := time.Now()
		if err := d.Connect(ctx); err != nil {
			b.Fatalf("connect: %v", err)
		}
		select {
		case at := <-listed:
			took = append(took, at.Sub(start))
		case <-ctx.Done():
			b.Fatal("no tools/list request")
		}
		cancel()
		d.Close()
	}
	b.StopTimer()
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "ms-p50-dial-to-listed")
	b.ReportMetric(float64(took[len(took)*9/10].Microseconds())/1000, "ms-p90-dial-to-listed")
}
