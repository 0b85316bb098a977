package servertest

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"sync"
	"testing"

	"github.com/xiaozhi-hub/hub/server"
)

// FreeAddr is a loopback TCP address nothing listens on (for a setting
// that must name its port before the hub starts). The port is chosen
// below the kernel's ephemeral range when it can be, where neither an
// outgoing connection nor another test's listener on port 0 can take it
// between this check and the hub's bind: only another FreeAddr could,
// one chance in thousands.
func FreeAddr(tb testing.TB) string {
	tb.Helper()
	if low := ephemeralLow(); low > 10000+1000 {
		for range 100 {
			addr := fmt.Sprintf("127.0.0.1:%d", 10000+rand.IntN(low-10000))
			if ln, err := net.Listen("tcp", addr); err == nil {
				ln.Close()
				return addr
			}
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// ephemeralLow is the first port of the kernel's ephemeral range (Linux),
// 0 when unknown.
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0
	}
	var low, high int
	if _, err := fmt.Sscan(string(b), &low, &high); err != nil {
		return 0
	}
	return low
}

// ClusterConfigs returns the configs of n hubs that form one cluster, as
// Start's are made (loopback, temporary data, Token, device-auth open):
// each with an embedded NATS node named hub-1…hub-n, joined by routes on
// free loopback ports (JetStream replicas 3 when n ≥ 3).
func ClusterConfigs(tb testing.TB, n int) []server.Config {
	tb.Helper()
	routes := make([]string, n)
	for i := range routes {
		routes[i] = FreeAddr(tb)
	}
	cfgs := make([]server.Config, n)
	for i := range cfgs {
		cfg := server.DefaultConfig()
		cfg.Listen, cfg.DataDir, cfg.APIToken, cfg.DeviceAuth = "127.0.0.1:0", tb.TempDir(), Token, "open"
		cfg.ClusterNATS, cfg.ClusterNode = "embedded", fmt.Sprintf("hub-%d", i+1)
		cfg.ClusterSecret = "cluster-test-secret-0123456789"
		if n > 1 { // a node alone has no routes
			cfg.ClusterListen = routes[i]
			for j, r := range routes {
				if j != i {
					cfg.ClusterPeers = append(cfg.ClusterPeers, "nats://"+r)
				}
			}
		}
		cfgs[i] = cfg
	}
	return cfgs
}

// StartCluster opens and runs the hubs of cfgs (ClusterConfigs) at once:
// JetStream needs its quorum before any of them can start. They are
// stopped at cleanup.
func StartCluster(tb testing.TB, cfgs []server.Config) []*server.Hub {
	tb.Helper()
	hubs := make([]*server.Hub, len(cfgs))
	errs := make([]error, len(cfgs))
	var wg sync.WaitGroup
	for i, cfg := range cfgs {
		wg.Go(func() { hubs[i], errs[i] = open(tb, cfg) })
	}
	wg.Wait()
	var stops []func()
	for _, h := range hubs {
		if h != nil {
			stops = append(stops, run(tb, h))
		}
	}
	tb.Cleanup(func() { // together: each waits for the others' quorum
		var wg sync.WaitGroup
		for _, stop := range stops {
			wg.Go(stop)
		}
		wg.Wait()
	})
	for i, err := range errs {
		if err != nil {
			tb.Fatalf("open hub %s: %v", cfgs[i].ClusterNode, err)
		}
	}
	return hubs
}
