package server_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/registry"
	"github.com/xiaozhi-hub/hub/sim"
)

// BenchmarkClusterCall measures a tool call made on the node holding the
// device's connection and on another node of a three-node cluster (three
// hubs with embedded NATS joined by routes, JetStream replicas 3, all in
// this process on loopback): the difference is what crossing nodes adds.
// Calls go through the registry, as REST, /mcp and the agent make them.
//
//	go test -run NONE -bench ClusterCall -benchtime 2000x ./server
func BenchmarkClusterCall(b *testing.B) {
	nodes := startCluster(b, 3)
	d := connectTo(b, nodes[0], sim.Config{DeviceID: "aa:00:00:00:0c:31"})
	waitFor(b, "the device on hub-2", func() bool {
		dev, err := nodes[1].Registry.Device(d.ID())
		return err == nil && dev.Online && dev.ToolCount > 0
	})
	for _, tc := range []struct {
		name string
		node *clusterNode
	}{{"same-node", nodes[0]}, {"cross-node", nodes[1]}} {
		req := registry.CallRequest{DeviceID: d.ID(), Tool: "self.get_device_status", Arguments: json.RawMessage(`{}`), Caller: "bench"}
		b.Run(tc.name, func(b *testing.B) {
			lat := make([]time.Duration, 0, b.N)
			for b.Loop() {
				start := time.Now()
				if _, err := tc.node.Registry.CallTool(context.Background(), req); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
		})
		b.Run(tc.name+"/parallel", func(b *testing.B) {
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := tc.node.Registry.CallTool(context.Background(), req); err != nil && hub.ErrorCode(err) != hub.EBUSY {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
