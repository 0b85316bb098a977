package config

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
)

// validateCluster checks the settings of a hub that is one node of a
// cluster (cluster-nats and the settings that need it).
func (c Config) validateCluster() []error {
	var errs []error
	if c.ClusterNATS != "" && c.ClusterNATS != "embedded" && !strings.HasPrefix(c.ClusterNATS, "nats://") && !strings.HasPrefix(c.ClusterNATS, "tls://") {
		errs = append(errs, fmt.Errorf("cluster-nats: %q is neither embedded nor NATS URLs such as nats://nats-1:4222", c.ClusterNATS))
	}
	if c.ClusterNATS != "embedded" && (c.ClusterListen != "" || len(c.ClusterPeers) > 0 || c.ClusterNATSListen != "") {
		errs = append(errs, errors.New("cluster-listen, cluster-peers and cluster-nats-listen need cluster-nats: embedded"))
	}
	if c.ClusterListen != "" && len(c.ClusterSecret) < 16 {
		errs = append(errs, errors.New("cluster-secret: cluster-listen needs a secret of at least 16 characters, the same on every node, so that nobody else can join the cluster's routes"))
	}
	if c.ClusterNATSListen != "" && len(c.ClusterSecret) < 16 {
		errs = append(errs, errors.New("cluster-secret: NATS clients at cluster-nats-listen log in as user xiaozhi-hub with cluster-secret; set one of at least 16 characters"))
	}
	if len(c.ClusterPeers) > 0 && c.ClusterListen == "" {
		errs = append(errs, errors.New("cluster-peers needs cluster-listen: the address the peers' routes reach this node on"))
	}
	if c.ClusterListen != "" && len(c.ClusterPeers) == 0 {
		// NATS would wait for peers that are not named, and JetStream never starts.
		errs = append(errs, errors.New("cluster-listen needs cluster-peers: name the other nodes' routes on every node, e.g. nats://hub-2:6222,nats://hub-3:6222 (a node alone needs neither)"))
	}
	return errs
}

// NodeName is the node's name in the cluster: cluster-node, or the host
// name and the port the hub listens on.
func (c Config) NodeName() string {
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

// JetStreamReplicas is the copies JetStream keeps of the shared state:
// cluster-replicas, or 3 for an embedded node with two or more peers, else 1.
func (c Config) JetStreamReplicas() int {
	if c.ClusterReplicas > 0 {
		return c.ClusterReplicas
	}
	if c.ClusterNATS == "embedded" && len(c.ClusterPeers) >= 2 {
		return 3
	}
	return 1
}

// NATSURLs are the URLs of the NATS cluster that cluster-nats names when
// it is not "embedded".
func (c Config) NATSURLs() []string { return strings.Split(c.ClusterNATS, ",") }
