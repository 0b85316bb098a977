package server

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/xiaozhi-hub/hub/agent"
	"github.com/xiaozhi-hub/hub/api"
	"github.com/xiaozhi-hub/hub/cluster"
	"github.com/xiaozhi-hub/hub/metrics"
)

// clusterSide is this hub's part of a cluster (cluster-nats set): its
// NATS connection, the embedded NATS node if it runs one, and its
// membership.
type clusterSide struct {
	node     *cluster.Node
	nc       *nats.Conn
	embedded *cluster.Embedded // nil with an external NATS
}

// joinCluster joins the cluster (cluster-nats set): see openCluster.
func (h *Hub) joinCluster(ctx context.Context) error {
	if h.cfg.ClusterNATS == "" {
		return nil
	}
	c, err := openCluster(ctx, h.cfg, h.log)
	if err != nil {
		return err
	}
	h.cluster = c
	h.closers.pushf(h.closeCluster) // after the registry: its devices' claims go with it
	return nil
}

// closeCluster leaves the cluster, unless Crash abandoned it.
func (h *Hub) closeCluster() {
	if h.cluster != nil {
		h.cluster.close()
		h.cluster = nil
	}
}

// openCluster connects to NATS (starting the embedded node first when
// cluster-nats is "embedded") and opens the shared buckets.
func openCluster(ctx context.Context, cfg Config, log *slog.Logger) (*clusterSide, error) {
	name := cfg.clusterNode()
	c := &clusterSide{}
	var err error
	if cfg.ClusterNATS == "embedded" {
		c.embedded, err = cluster.StartEmbedded(cluster.EmbeddedOptions{
			Name: name, StoreDir: filepath.Join(cfg.DataDir, "nats"), Listen: cfg.ClusterListen, Peers: cfg.ClusterPeers, Secret: cfg.ClusterSecret,
			ClientListen: cfg.ClusterNATSListen, Logger: log.With("component", "nats"),
		})
		if err != nil {
			return nil, err
		}
		c.nc, err = c.embedded.Connect("xiaozhi-hub " + name)
	} else {
		c.nc, err = cluster.Dial(strings.Split(cfg.ClusterNATS, ","), "xiaozhi-hub "+name)
	}
	if err != nil {
		c.close()
		return nil, fmt.Errorf("cluster: %w", err)
	}
	c.node, err = cluster.Open(ctx, c.nc, cluster.Options{Name: name, Replicas: cfg.clusterReplicas(), ChatTTL: agent.DefaultSessionTTL, Logger: log.With("component", "cluster")})
	if err != nil {
		c.close()
		return nil, err
	}
	return c, nil
}

// close leaves the cluster and stops NATS; after the registry has closed.
func (c *clusterSide) close() {
	if c.node != nil {
		c.node.Close()
	}
	if c.nc != nil {
		c.nc.Drain()
		c.nc.Close()
	}
	if c.embedded != nil {
		c.embedded.Shutdown()
	}
}

// metrics registers the cluster's gauges and counters.
func (c *clusterSide) metrics(m *metrics.Metrics) {
	m.Gauge("xiaozhi_hub_cluster_nodes", "Hub nodes of the cluster with a live lease, as this node last saw them.", func() float64 { return float64(c.node.Nodes()) })
	m.Gauge("xiaozhi_hub_cluster_remote_devices", "Devices online on this node through the node holding their connection.", func() float64 { return float64(c.node.RemoteDevices()) })
	m.Gauge("xiaozhi_hub_cluster_nats_connected", "1 while this node's connection to NATS is up; without it the node cannot change the shared state.", func() float64 {
		if c.nc.IsConnected() {
			return 1
		}
		return 0
	})
	m.CounterFunc("xiaozhi_hub_cluster_history_unshared_total", "Call records and events this node recorded but could not append to the cluster's history stream.", func() float64 { return float64(c.node.Unshared()) })
}

// sharedHistory is where the agent keeps conversations for every node;
// nil for a hub alone.
func sharedHistory(c *clusterSide) agent.SharedHistory {
	if c == nil {
		return nil
	}
	return c.node
}

// clusterInfo is what GET /api/cluster tells; nil for a hub alone.
func (h *Hub) clusterInfo() func() api.ClusterInfo {
	c := h.cluster
	if c == nil {
		return nil
	}
	return func() api.ClusterInfo {
		return api.ClusterInfo{Node: c.node.Name(), Nodes: c.node.AliveNodes(), NATS: c.nc.Status().String(), HistoryUnshared: c.node.Unshared()}
	}
}

// clusterNode is the node's name: cluster-node, or the host name and
// the port the hub listens on.
func (c Config) clusterNode() string {
	if c.ClusterNode != "" {
		return c.ClusterNode
	}
	host, _ := os.Hostname()
	_, port, err := net.SplitHostPort(c.Listen)
	if err != nil {
		port = c.Listen
	}
	return host + "-" + port
}

func (c Config) clusterReplicas() int {
	if c.ClusterReplicas > 0 {
		return c.ClusterReplicas
	}
	if c.ClusterNATS == "embedded" && len(c.ClusterPeers) >= 2 {
		return 3
	}
	return 1
}

// Crash stops the hub as a killed process would, for the cluster's
// failure tests: NATS goes first, so the node hands nothing over (its
// devices' claims and its lease are left to expire), then every
// connection is cut.
func (h *Hub) Crash() {
	if c := h.cluster; c != nil {
		if c.embedded != nil {
			c.embedded.Shutdown()
		}
		c.nc.Close()
		c.node.Abandon()
		h.cluster = nil
	}
	h.Close()
}
