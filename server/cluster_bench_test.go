package server_test

import (
	"context"
	"encoding/json"
	"runtime"
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

// BenchmarkClusterMemory estimates what a device costs a node that does
// not hold its connection: the heap of a three-node cluster (all in this
// process) with n devices on hub-1, against one hub alone with the same n
// devices; the difference, over two nodes, is the cost per device per
// other node (the NATS nodes' own share included).
//
//	go test -run NONE -bench ClusterMemory -benchtime 1x ./server
func BenchmarkClusterMemory(b *testing.B) {
	const n = 1000
	heap := func() float64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return float64(m.HeapAlloc)
	}
	connectAll := func(url string) []*sim.Device {
		devs := make([]*sim.Device, n)
		for j := range devs {
			id, _ := sim.MAC("cc:00", j+1)
			devs[j] = sim.New(sim.Config{URL: url, DeviceID: id})
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			if err := devs[j].Connect(ctx); err != nil {
				b.Fatal(err)
			}
			cancel()
		}
		return devs
	}
	for range b.N {
		base := heap()
		alone := startHub(b, b.TempDir(), nil)
		devs := connectAll(alone.DeviceURL())
		waitFor(b, "tools cached on the lone hub", func() bool { return readyCount(alone.Registry.Devices()) == n })
		single := heap() - base
		for _, d := range devs {
			d.Close()
		}
		alone.stop()

		base = heap()
		nodes := startCluster(b, 3)
		empty := heap() - base
		connectAll(nodes[0].DeviceURL())
		for _, c := range nodes {
			waitLong(b, "every device online with tools on "+c.name, func() bool { return readyCount(c.Registry.Devices()) == n })
		}
		clustered := heap() - base - empty
		b.ReportMetric(single/n/1024, "KB/device-alone")
		b.ReportMetric(clustered/n/1024, "KB/device-cluster")
		b.ReportMetric((clustered-single)/2/n/1024, "KB/device/other-node")
		b.ReportMetric(empty/1024/1024, "MB-three-empty-nodes")
	}
}

func readyCount(devs []hub.Device) int {
	ready := 0
	for _, d := range devs {
		if d.Online && d.ToolCount > 0 && !d.ToolsStale {
			ready++
		}
	}
	return ready
}
