package server_test

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/xiaozhi-hub/hub/mqttremote/emqxtest"
	"github.com/xiaozhi-hub/hub/server"
	"github.com/xiaozhi-hub/hub/sim/mqttdevice"
)

// A hub started with mqtt-broker against a separately running broker
// configured like docs/emqx.md: the OTA answer sends devices to that
// broker, the broker asks the hub (POST /mqtt/auth) about their logins,
// and an idle device there is discovered and controlled.
func TestExternalBroker(t *testing.T) {
	b := emqxtest.Start(t)
	_, port, _ := net.SplitHostPort(b.Addr)
	h := startHub(t, "", func(c *server.Config) {
		c.DeviceAuth = "token"
		c.MQTTBroker = "mqtt://" + emqxtest.HubUser + ":" + emqxtest.HubPassword + "@" + b.Addr
		c.MQTTBrokerSecret = emqxtest.Secret
		c.MQTTPublic = "127.0.0.1:" + port
		c.UDPListen, c.UDPPublic = "127.0.0.1:0", "127.0.0.1:9"
	})
	b.SetAuthURL(h.URL() + "/mqtt/auth")
	const id = "aa:00:00:00:9e:01"
	login := mqttLogin(t, otaCheck(t, h, id, "uuid-9e-01"))
	if login.Endpoint != "127.0.0.1:"+port {
		t.Fatalf("the OTA answer's endpoint %q is not the external broker", login.Endpoint)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// The hub learns connects from the broker's event messages: it must be
	// subscribed before the device connects (a device that connected while
	// the hub was away is learnt from its next message).
	waitFor(t, "the hub subscribed at the broker", func() bool {
		return len(b.Srv.Topics.Subscribers("$SYS/brokers/x/clients/y/connected").Subscriptions) > 0
	})
	dev := serveMCP(t, connectMQTT(t, login))
	h.readyTools(id)
	if st, body := h.call("POST", "/api/devices/"+id+"/tools/self.light.set/call", map[string]any{"arguments": map[string]any{"on": true}}); st != 200 || !dev.lightOn() {
		t.Fatalf("call through the external broker = %d %v", st, body)
	}
	bad := login
	bad.Password = "guess"
	if _, err := mqttdevice.Connect(ctx, bad); !errors.Is(err, mqttdevice.ErrRefused) {
		t.Fatalf("a wrong password at the external broker: %v", err)
	}
	h.waitEvent(id, "connection_refused")
	if st, _ := h.callWith("", "POST", "/mqtt/auth", map[string]any{"clientid": login.ClientID, "username": id, "password": login.Password}); st != 401 {
		t.Fatalf("/mqtt/auth without the broker's secret = %d", st)
	}
}
