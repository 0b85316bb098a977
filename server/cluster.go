package server

import (
	"context"

	"github.com/xiaozhi-hub/hub/agent"
	"github.com/xiaozhi-hub/hub/api"
	"github.com/xiaozhi-hub/hub/cluster"
	"github.com/xiaozhi-hub/hub/internal/datadir"
	"github.com/xiaozhi-hub/hub/metrics"
)

// joinCluster makes this hub a node of the cluster (cluster-nats set):
// it connects to NATS, starting the embedded node first when cluster-nats
// is "embedded", and opens the shared buckets.
func (h *Hub) joinCluster(ctx context.Context) error {
	cfg := h.cfg
	if cfg.ClusterNATS == "" {
		return nil
	}
	name := cfg.NodeName()
	o := cluster.JoinOptions{Node: cluster.Options{Name: name, Replicas: cfg.JetStreamReplicas(), ChatTTL: agent.DefaultSessionTTL, Logger: h.log.With("component", "cluster")}}
	if cfg.ClusterNATS == "embedded" {
		o.Embedded = &cluster.EmbeddedOptions{
			Name: name, StoreDir: h.lock.Path(datadir.NATSDir), Listen: cfg.ClusterListen, Peers: cfg.ClusterPeers, Secret: cfg.ClusterSecret,
			ClientListen: cfg.ClusterNATSListen, Logger: h.log.With("component", "nats"),
		}
	} else {
		o.URLs = cfg.NATSURLs()
	}
	c, err := cluster.Join(ctx, o)
	if err != nil {
		return err
	}
	h.cluster = c
	h.closers.pushf(h.leaveCluster) // after the registry: its devices' claims go with it
	return nil
}

// leaveCluster leaves the cluster, unless Crash abandoned it.
func (h *Hub) leaveCluster() {
	if h.cluster != nil {
		h.cluster.Close()
		h.cluster = nil
	}
}

// clusterMetrics registers the cluster's gauges and counters.
func clusterMetrics(m *metrics.Metrics, c *cluster.Member) {
	n := c.Node
	m.Gauge("xiaozhi_hub_cluster_nodes", "Hub nodes of the cluster with a live lease, as this node last saw them.", func() float64 { return float64(n.Nodes()) })
	m.Gauge("xiaozhi_hub_cluster_remote_devices", "Devices online on this node through the node holding their connection.", func() float64 { return float64(n.RemoteDevices()) })
	m.Gauge("xiaozhi_hub_cluster_nats_connected", "1 while this node's connection to NATS is up; without it the node cannot change the shared state.", func() float64 {
		if c.Connected() {
			return 1
		}
		return 0
	})
	m.CounterFunc("xiaozhi_hub_cluster_history_unshared_total", "Call records and events this node recorded but could not append to the cluster's history stream.", func() float64 { return float64(n.Unshared()) })
}

// sharedHistory is where the agent keeps conversations for every node;
// nil for a hub alone.
func sharedHistory(c *cluster.Member) agent.SharedHistory {
	if c == nil {
		return nil
	}
	return c.Node
}

// clusterInfo is what GET /api/cluster tells; nil for a hub alone.
func (h *Hub) clusterInfo() func() api.ClusterInfo {
	c := h.cluster
	if c == nil {
		return nil
	}
	return func() api.ClusterInfo {
		return api.ClusterInfo{Node: c.Node.Name(), Nodes: c.Node.AliveNodes(), NATS: c.Status(), HistoryUnshared: c.Node.Unshared()}
	}
}

// Crash stops the hub as a killed process would, for the cluster's
// failure tests: NATS goes first, so the node hands nothing over (its
// devices' claims and its lease are left to expire), then every
// connection is cut.
func (h *Hub) Crash() {
	if c := h.cluster; c != nil {
		c.Crash()
		h.cluster = nil
	}
	h.Close()
}
