// Package emqxtest runs, for tests, a broker configured the way
// docs/emqx.md configures EMQX: the embedded mochi broker with hooks that
// authenticate devices through the hub's HTTP authenticator (and the hub
// as a built-in user), confine each device to its own topics,
// auto-subscribe it to its downlink topic, and publish client connected
// and disconnected event messages on $SYS.
package emqxtest

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"testing"

	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/listeners"
	"github.com/mochi-mqtt/server/v2/packets"
	"github.com/xiaozhi-hub/hub/protocol"
)

// Hub login and the secret the broker sends to the authenticator.
const (
	HubUser     = "hub"
	HubPassword = "hub-password"
	Secret      = "broker-secret-0123"
)

// Broker is the running broker.
type Broker struct {
	mqtt.HookBase
	Srv  *mqtt.Server
	Addr string

	mu      sync.Mutex
	authURL string
}

// SetAuthURL points the broker at the hub's authenticator (POST).
func (b *Broker) SetAuthURL(u string) { b.mu.Lock(); b.authURL = u; b.mu.Unlock() }

// Start runs a broker on loopback until the test ends.
func Start(t testing.TB) *Broker {
	t.Helper()
	b := &Broker{Srv: mqtt.New(&mqtt.Options{InlineClient: true, Logger: slog.New(slog.DiscardHandler)})}
	if err := b.Srv.AddHook(b, nil); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b.Addr = ln.Addr().String()
	ln.Close()
	if err := b.Srv.AddListener(listeners.NewTCP(listeners.Config{ID: "t", Address: b.Addr})); err != nil {
		t.Fatal(err)
	}
	if err := b.Srv.Serve(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Srv.Close() })
	return b
}

func (b *Broker) ID() string { return "emqx-like" }
func (b *Broker) Provides(h byte) bool {
	return bytes.Contains([]byte{mqtt.OnConnectAuthenticate, mqtt.OnACLCheck, mqtt.OnSessionEstablished, mqtt.OnDisconnect}, []byte{h})
}

func (b *Broker) OnConnectAuthenticate(cl *mqtt.Client, pk packets.Packet) bool {
	user, pass := string(pk.Connect.Username), string(pk.Connect.Password)
	b.mu.Lock()
	authURL := b.authURL
	b.mu.Unlock()
	result := "ignore"
	if authURL != "" {
		body, _ := json.Marshal(map[string]string{"clientid": cl.ID, "username": user, "password": pass, "peerhost": cl.Net.Remote})
		req, _ := http.NewRequest("POST", authURL, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+Secret)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		var out struct{ Result string }
		_ = json.NewDecoder(res.Body).Decode(&out)
		res.Body.Close()
		result = out.Result
	}
	switch result {
	case "allow":
		return true
	case "ignore": // the next authenticator: the built-in user of the hub
		return user == HubUser && pass == HubPassword
	}
	return false
}

func (b *Broker) OnACLCheck(cl *mqtt.Client, topic string, write bool) bool {
	user := string(cl.Properties.Username)
	if user == HubUser {
		return true
	}
	return write && topic == protocol.UplinkTopic(user) || !write && topic == protocol.DownlinkTopic(user)
}

func (b *Broker) OnSessionEstablished(cl *mqtt.Client, pk packets.Packet) {
	user := string(cl.Properties.Username)
	if user == HubUser {
		return
	}
	sub := packets.Subscription{Filter: protocol.DownlinkTopic(user)}
	b.Srv.Topics.Subscribe(cl.ID, sub) // auto-subscribe
	cl.State.Subscriptions.Add(sub.Filter, sub)
	ev, _ := json.Marshal(map[string]string{"clientid": cl.ID, "username": user, "ipaddress": "127.0.0.1"})
	_ = b.Srv.Publish("$SYS/brokers/emqx@test/clients/"+cl.ID+"/connected", ev, false, 0)
}

func (b *Broker) OnDisconnect(cl *mqtt.Client, err error, expire bool) {
	user := string(cl.Properties.Username)
	if user == HubUser || user == "" {
		return
	}
	ev, _ := json.Marshal(map[string]string{"clientid": cl.ID, "username": user, "reason": "tcp_closed"})
	_ = b.Srv.Publish("$SYS/brokers/emqx@test/clients/"+cl.ID+"/disconnected", ev, false, 0)
}
