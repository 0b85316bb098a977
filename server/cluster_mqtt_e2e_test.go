package server_test

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/xiaozhi-hub/hub/mqttremote/emqxtest"
	"github.com/xiaozhi-hub/hub/server"
	"github.com/xiaozhi-hub/hub/sim"
)

// freeUDPPort reserves a loopback UDP address for a node's audio server
// (its udp-public must name the port before the hub starts).
func freeUDPPort(t testing.TB) string {
	t.Helper()
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.LocalAddr().String()
}

// holderOf is the node holding the device's session: the one on which the
// device is online without naming another node.
func holderOf(t testing.TB, nodes []*clusterNode, id string) *clusterNode {
	t.Helper()
	var held *clusterNode
	for _, c := range nodes {
		dev := c.device(id)
		if dev["online"] != true {
			return nil
		}
		if dev["node"] == nil {
			if held != nil {
				t.Fatalf("%s is held by both %s and %s", id, held.name, c.name)
			}
			held = c
		}
	}
	return held
}

// Three hubs share one external broker (configured like docs/emqx.md):
// every device is held by one node, online and controllable from every
// node, its messages reach the holder whichever node the shared
// subscription hands them to, and its conversation's UDP channel is the
// holder's. When the holder dies its devices, still connected at the
// broker, are taken over by the others without reconnecting.
func TestClusterSharesAnMQTTBroker(t *testing.T) {
	b := emqxtest.Start(t)
	nodes := startCluster(t, 3, func(c *server.Config) {
		c.MQTTBroker = "mqtt://" + emqxtest.HubUser + ":" + emqxtest.HubPassword + "@" + b.Addr
		c.MQTTBrokerSecret, c.MQTTPublic = emqxtest.Secret, b.Addr
		udp := freeUDPPort(t)
		c.UDPListen, c.UDPPublic = udp, udp
	})
	b.SetAuthURL(nodes[1].URL() + "/mqtt/auth") // approvals are shared: any node can answer
	waitFor(t, "the three hubs subscribed at the broker", func() bool {
		return len(b.Srv.Topics.Subscribers("$SYS/brokers/x/clients/y/connected").Subscriptions) == 3
	})

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var devs []*sim.Device
	for i := range 6 {
		d := sim.New(sim.Config{DeviceID: fmt.Sprintf("aa:00:00:00:3c:%02x", i), OTAURL: nodes[i%3].OTAURL()})
		if _, err := d.Provision(ctx); err != nil {
			t.Fatal(err)
		}
		if err := d.Connect(ctx); err != nil {
			t.Fatal(err)
		}
		if d.MQTTSession() == nil {
			t.Fatalf("%s did not move to the broker", d.ID())
		}
		t.Cleanup(func() { d.Close() })
		devs = append(devs, d)
	}
	holders := map[string]*clusterNode{}
	for _, d := range devs {
		waitFor(t, d.ID()+" online with its tools on every node, held by one", func() bool {
			for _, c := range nodes {
				if dev := c.device(d.ID()); dev["toolCount"] == nil || dev["toolCount"].(float64) == 0 {
					return false
				}
			}
			holders[d.ID()] = holderOf(t, nodes, d.ID())
			return holders[d.ID()] != nil
		})
	}
	byNode := map[string]int{}
	for _, h := range holders {
		byNode[h.name]++
	}
	if len(byNode) < 2 {
		t.Fatalf("the six devices are held by %v; the nodes should share them", byNode)
	}

	// Every node calls every device; each call's reply comes back through
	// whichever node the broker gives it to.
	for round := range 3 {
		for i, d := range devs {
			for _, c := range nodes {
				vol := 10*round + i + 1
				st, body := c.call("POST", "/api/devices/"+d.ID()+"/tools/self.audio_speaker.set_volume/call", map[string]any{"arguments": map[string]any{"volume": vol}})
				if st != 200 || body["isError"] == true || d.Volume() != vol {
					t.Fatalf("set_volume %d on %s (held by %s) from %s = %d %v; the device has %d", vol, d.ID(), holders[d.ID()].name, c.name, st, body, d.Volume())
				}
			}
		}
	}
	passed := 0.0
	for _, c := range nodes {
		passed += c.metric(t, `xiaozhi_hub_mqtt_passed_total{direction="out"}`)
	}
	if passed == 0 {
		t.Fatal("no device message reached a node other than its holder: the shared subscription did not spread them")
	}
	t.Logf("holders %v; %v device messages passed to their holder", byNode, passed)

	// A conversation: the hello may reach any node, the holder answers it
	// and the audio goes to the holder's UDP socket.
	d := devs[0]
	h := holders[d.ID()]
	ch, err := d.OpenConversation(ctx)
	if err != nil {
		t.Fatalf("hello through the shared broker: %v", err)
	}
	for i := range 3 {
		if err := ch.SendAudio([]byte{0xf8, 0xff, 0xfe, byte(i)}, 0); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "the audio at the holder", func() bool {
		return h.metric(t, `xiaozhi_hub_udp_datagrams_total{outcome="accepted"}`) == 3
	})
	for _, c := range nodes {
		if want := map[bool]float64{true: 1, false: 0}[c == h]; c.metric(t, "xiaozhi_hub_udp_sessions") != want {
			t.Fatalf("%s has %v UDP sessions; want %v (the conversation belongs to %s)", c.name, c.metric(t, "xiaozhi_hub_udp_sessions"), want, h.name)
		}
	}
	if err := ch.Close(true); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the UDP channel closed", func() bool { return h.metric(t, "xiaozhi_hub_udp_sessions") == 0 })

	// The holder dies. Its devices stay connected at the broker; once its
	// lease lapses the survivors take them over, and they are served
	// without reconnecting.
	connects := d.Stats().Connects
	h.Crash()
	var alive []*clusterNode
	for _, c := range nodes {
		if c != h {
			alive = append(alive, c)
		}
	}
	start := time.Now()
	for _, dv := range devs {
		if holders[dv.ID()] != h {
			continue
		}
		waitLong(t, dv.ID()+" taken over by a live node", func() bool {
			n := holderOf(t, alive, dv.ID())
			if n == nil {
				return false
			}
			holders[dv.ID()] = n
			return true
		})
	}
	t.Logf("%s's devices served by the others %v after its death", h.name, time.Since(start).Round(100*time.Millisecond))
	for i, dv := range devs {
		for _, c := range alive {
			vol := 90 + i
			if st, body := c.call("POST", "/api/devices/"+dv.ID()+"/tools/self.audio_speaker.set_volume/call", map[string]any{"arguments": map[string]any{"volume": vol}}); st != 200 || dv.Volume() != vol {
				t.Fatalf("after the death, set_volume on %s from %s = %d %v", dv.ID(), c.name, st, body)
			}
		}
	}
	if got := d.Stats().Connects; got != connects || d.MQTTSession() == nil {
		t.Fatalf("the device reconnected (%d → %d connects): the takeover should need nothing from it", connects, got)
	}
	// Its next conversation is on its new holder.
	h = holders[d.ID()]
	ch, err = d.OpenConversation(ctx)
	if err != nil {
		t.Fatalf("hello after the takeover: %v", err)
	}
	defer ch.Close(true)
	if err := ch.SendAudio([]byte{0xf8, 0xff, 0xfe, 9}, 0); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the audio at the new holder "+h.name, func() bool {
		return h.metric(t, `xiaozhi_hub_udp_datagrams_total{outcome="accepted"}`) >= 1
	})
}

// With each node's own broker (mqtt-listen), an MQTT device is held by the
// node whose broker it connected to, and is served from every node like a
// WebSocket device connected there.
func TestClusterNodesWithTheirOwnBrokers(t *testing.T) {
	nodes := startCluster(t, 2, func(c *server.Config) { c.MQTTListen = "127.0.0.1:0" })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d := sim.New(sim.Config{DeviceID: "aa:00:00:00:3d:01", OTAURL: nodes[0].OTAURL()})
	if _, err := d.Provision(ctx); err != nil {
		t.Fatal(err)
	}
	if err := d.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	if d.MQTTSession() == nil {
		t.Fatal("the device did not move to hub-1's broker")
	}
	waitFor(t, "the MQTT device on hub-2 through hub-1", func() bool {
		dev := nodes[1].device(d.ID())
		return dev["online"] == true && dev["node"] == "hub-1" && dev["toolCount"] != nil && dev["toolCount"].(float64) > 0
	})
	if st, body := nodes[1].call("POST", "/api/devices/"+d.ID()+"/tools/self.audio_speaker.set_volume/call", map[string]any{"arguments": map[string]any{"volume": 37}}); st != 200 || d.Volume() != 37 {
		t.Fatalf("call from hub-2 to an MQTT device on hub-1's broker = %d %v (volume %d)", st, body, d.Volume())
	}
}
