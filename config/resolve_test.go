package config_test

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/xiaozhi-hub/hub/config"
)

// A cluster node without cluster-node is named for its host and listen
// port; JetStream keeps three copies once two peers are named, and the
// NATS URLs are cluster-nats's, comma-separated.
func TestClusterSettings(t *testing.T) {
	c := config.Default()
	host, _ := os.Hostname()
	if got := c.NodeName(); got != host+"-8000" {
		t.Errorf("default node name %q, want %q", got, host+"-8000")
	}
	c.ClusterNode = "hub-1"
	if got := c.NodeName(); got != "hub-1" {
		t.Errorf("cluster-node hub-1 named %q", got)
	}
	if got := c.JetStreamReplicas(); got != 1 {
		t.Errorf("replicas alone = %d, want 1", got)
	}
	c.ClusterNATS, c.ClusterPeers = "embedded", []string{"nats://hub-2:6222", "nats://hub-3:6222"}
	if got := c.JetStreamReplicas(); got != 3 {
		t.Errorf("replicas with two peers = %d, want 3", got)
	}
	c.ClusterNATS = "nats://nats-1:4222,nats://nats-2:4222"
	if got := c.NATSURLs(); !slices.Equal(got, []string{"nats://nats-1:4222", "nats://nats-2:4222"}) {
		t.Errorf("NATS URLs %v", got)
	}
}

// MQTT is off unless mqtt-listen or mqtt-broker is set; devices are told
// the listen port unless mqtt-public says otherwise.
func TestMQTTSettings(t *testing.T) {
	c := config.Default()
	if _, on, err := c.MQTT(); on || err != nil {
		t.Fatalf("default: on=%v err=%v", on, err)
	}
	c.MQTTListen = ":1883"
	a, on, err := c.MQTT()
	if !on || err != nil || a.PublicPort != 1883 || a.PublicHost != "" || a.TLS {
		t.Fatalf("mqtt-listen :1883: %+v on=%v err=%v", a, on, err)
	}
	c.MQTTPublic = "hub.example.com:8883"
	if _, _, err := c.MQTT(); err == nil || !strings.Contains(err.Error(), "set mqtt-tls-cert and mqtt-tls-key") {
		t.Errorf("port 8883 without a certificate: %v", err)
	}
}

// In-process devices get a token of their own when device-tokens is
// empty; tokens that are set stay as they are.
func TestInProcessToken(t *testing.T) {
	c := config.Default().WithInProcessToken()
	if len(c.DeviceTokens) != 1 || !strings.HasPrefix(c.DeviceTokens[0], "in-process-") {
		t.Fatalf("device tokens %v", c.DeviceTokens)
	}
	c = config.Default()
	c.DeviceTokens = []string{"kitchen-secret"}
	if got := c.WithInProcessToken().DeviceTokens; !slices.Equal(got, []string{"kitchen-secret"}) {
		t.Errorf("set tokens became %v", got)
	}
}
