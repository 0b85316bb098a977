package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
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

// BenchmarkClusterThroughput measures calls per second with 1, 2 and 3
// nodes on this one machine: twelve devices spread over the nodes, and
// each call made on the next node in turn (as a load balancer spreads
// requests), so with k nodes (k-1)/k of the calls cross nodes. All nodes
// share this machine's CPU: more nodes add NATS hops, not cores.
//
//	go test -run NONE -bench ClusterThroughput -benchtime 6000x ./server
func BenchmarkClusterThroughput(b *testing.B) {
	for _, k := range []int{1, 2, 3} {
		b.Run(fmt.Sprintf("nodes=%d", k), func(b *testing.B) {
			nodes := startCluster(b, k)
			var devs []*sim.Device
			for i := range 12 {
				id, _ := sim.MAC("cd:00", i+1)
				devs = append(devs, connectTo(b, nodes[i%k], sim.Config{DeviceID: id}))
			}
			for _, c := range nodes {
				waitLong(b, "every device ready on "+c.name, func() bool { return readyCount(c.Registry.Devices()) == len(devs) })
			}
			var next atomic.Uint64
			b.SetParallelism(4)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					i := next.Add(1)
					req := registry.CallRequest{DeviceID: devs[i%12].ID(), Tool: "self.get_device_status", Arguments: json.RawMessage(`{}`), Caller: "bench"}
					if _, err := nodes[i%uint64(k)].Registry.CallTool(context.Background(), req); err != nil && hub.ErrorCode(err) != hub.EBUSY {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
		})
	}
}

// BenchmarkClusterReadiness measures a connection storm: n devices,
// spread evenly over the nodes, connect at once; the times are until each
// device's own node has its tools, and until every node lists every device
// with its tools (the tool lists and presence reach the other nodes through
// JetStream). One node is the baseline.
//
//	go test -run NONE -bench ClusterReadiness -benchtime 1x ./server
func BenchmarkClusterReadiness(b *testing.B) {
	const n = 600
	for _, k := range []int{1, 3} {
		b.Run(fmt.Sprintf("nodes=%d", k), func(b *testing.B) {
			for range b.N {
				b.StopTimer()
				nodes := startCluster(b, k)
				devs := make([]*sim.Device, n)
				for j := range devs {
					id, _ := sim.MAC("ce:00", j+1)
					devs[j] = sim.New(sim.Config{URL: nodes[j%k].DeviceURL(), DeviceID: id})
				}
				b.StartTimer()
				start := time.Now()
				var wg sync.WaitGroup
				for _, d := range devs {
					wg.Go(func() {
						ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
						defer cancel()
						if err := d.Connect(ctx); err != nil {
							b.Errorf("connect: %v", err)
						}
					})
				}
				wg.Wait()
				var own, all time.Duration
				for own == 0 || all == 0 {
					ready, ownReady := 0, 0
					for _, c := range nodes {
						for _, d := range c.Registry.Devices() {
							if d.Online && d.ToolCount > 0 && !d.ToolsStale {
								ready++
								if d.Node == "" {
									ownReady++
								}
							}
						}
					}
					if own == 0 && ownReady == n {
						own = time.Since(start)
					}
					if ready == k*n {
						all = time.Since(start)
					}
					if time.Since(start) > 2*time.Minute {
						b.Fatalf("not ready after 2 min: %d of %d on their own node, %d of %d everywhere", ownReady, n, ready, k*n)
					}
					time.Sleep(5 * time.Millisecond)
				}
				b.StopTimer()
				b.ReportMetric(float64(own.Milliseconds()), "ms-ready-on-own-node")
				b.ReportMetric(float64(all.Milliseconds()), "ms-ready-on-every-node")
				for _, d := range devs {
					d.Close()
				}
			}
		})
	}
}
