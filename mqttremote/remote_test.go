package mqttremote

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"
	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/mqttremote/emqxtest"
	"github.com/xiaozhi-hub/hub/protocol"
	"github.com/xiaozhi-hub/hub/sim/mqttdevice"
)

const secret = emqxtest.Secret

// side records what the client reports.
type side struct {
	events   chan string
	messages chan string
}

func start(t *testing.T) (*Client, *side, string, *mqtt.Server) {
	t.Helper()
	auth := httptest.NewServer(AuthHandler(secret, func(_ context.Context, clientID, username, password, _ string) error {
		id, err := protocol.ParseMQTTLogin(clientID, username, password)
		if err != nil {
			return err
		}
		if password != "token of "+id.DeviceID {
			return hub.Errorf(hub.EUNAUTHORIZED, "wrong password")
		}
		return nil
	}, nil))
	t.Cleanup(auth.Close)
	b := emqxtest.Start(t)
	b.SetAuthURL(auth.URL)
	srv, addr := b.Srv, b.Addr
	s := &side{events: make(chan string, 100), messages: make(chan string, 100)}
	u, _ := url.Parse("mqtt://hub:hub-password@" + addr)
	c, err := New(Config{URL: u,
		OnConnect:    func(d Device) { s.events <- "connect " + d.DeviceID },
		OnMessage:    func(id string, p []byte) { s.messages <- id + " " + string(p) },
		OnDisconnect: func(id, reason string) { s.events <- "disconnect " + id + ": " + reason },
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = c.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	deadline := time.Now().Add(10 * time.Second)
	for srv.Clients.Len() == 0 || !subscribed(srv) {
		if time.Now().After(deadline) {
			t.Fatal("the hub's client did not connect and subscribe")
		}
		time.Sleep(10 * time.Millisecond)
	}
	return c, s, addr, srv
}

func subscribed(srv *mqtt.Server) bool {
	return len(srv.Topics.Subscribers("$SYS/brokers/x/clients/y/connected").Subscriptions) > 0
}

func login(addr, id string) mqttdevice.Config {
	return mqttdevice.Config{Endpoint: addr, ClientID: protocol.MQTTClientID(id, "c1"), Username: id, Password: "token of " + id, PublishTopic: protocol.UplinkTopic(id)}
}

func next(t *testing.T, ch <-chan string, prefix string) string {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case v := <-ch:
			if strings.HasPrefix(v, prefix) {
				return v
			}
		case <-deadline:
			t.Fatalf("timed out waiting for %q", prefix)
		}
	}
}

// A device at the external broker is seen connecting, gets the hub's
// messages on its downlink topic (it never subscribes), its messages reach
// the hub, and its disconnect is reported.
func TestDeviceThroughExternalBroker(t *testing.T) {
	c, s, addr, _ := start(t)
	const id = "aa:00:00:00:8e:01"
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	d, err := mqttdevice.Connect(ctx, login(addr, id))
	if err != nil {
		t.Fatal(err)
	}
	next(t, s.events, "connect "+id)
	if err := c.Publish(id, []byte(`{"type":"mcp","payload":{"jsonrpc":"2.0","id":1,"method":"initialize"}}`)); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-d.Messages():
		if !strings.Contains(string(m.Payload), "initialize") {
			t.Fatalf("device got %s", m.Payload)
		}
	case <-ctx.Done():
		t.Fatal("the device did not receive the hub's message")
	}
	if err := d.Publish([]byte(`{"type":"mcp","payload":{"jsonrpc":"2.0","id":1,"result":{}}}`)); err != nil {
		t.Fatal(err)
	}
	next(t, s.messages, id+` {"type":"mcp"`)
	_ = d.Publish([]byte("not json"))
	d.Drop()
	next(t, s.events, "disconnect "+id)
	if c.Stats().NotJSON != 1 {
		t.Fatalf("stats %+v", c.Stats())
	}
	if err := c.Publish(id, []byte(`{}`)); hub.ErrorCode(err) != hub.EOFFLINE {
		t.Fatalf("publish to a gone device: %v", err)
	}
}

// Wrong logins are denied by the hub's authenticator; a device cannot
// publish as another (the broker's ACL); the authenticator itself needs the
// broker's secret.
func TestExternalBrokerRefusals(t *testing.T) {
	_, s, addr, _ := start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	bad := login(addr, "aa:00:00:00:8e:02")
	bad.Password = "guess"
	if _, err := mqttdevice.Connect(ctx, bad); !errors.Is(err, mqttdevice.ErrRefused) {
		t.Fatalf("a wrong password: %v", err)
	}
	a, err := mqttdevice.Connect(ctx, login(addr, "aa:00:00:00:8e:03"))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Drop()
	next(t, s.events, "connect aa:00:00:00:8e:03")
	_ = a.PublishTo(protocol.UplinkTopic("aa:00:00:00:8e:04"), []byte(`{"type":"mcp"}`))
	_ = a.Publish([]byte(`{"type":"listen"}`))
	if m := next(t, s.messages, ""); !strings.HasPrefix(m, "aa:00:00:00:8e:03 ") {
		t.Fatalf("a message under another device's name reached the hub: %s", m)
	}
	res, err := http.Post(authURLOf(t), "application/json", strings.NewReader(`{}`))
	if err == nil {
		res.Body.Close()
	}
	if err != nil || res.StatusCode != 401 {
		t.Fatalf("the authenticator without the broker's secret: %v %v", res, err)
	}
}

func authURLOf(t *testing.T) string {
	srv := httptest.NewServer(AuthHandler(secret, nil, nil))
	t.Cleanup(srv.Close)
	return srv.URL
}

// When the hub loses the broker it reports its devices offline, reconnects
// by itself, and learns a device again from its next message.
func TestHubReconnectsToTheBroker(t *testing.T) {
	_, s, addr, srv := start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	const id = "aa:00:00:00:8e:05"
	d, err := mqttdevice.Connect(ctx, login(addr, id))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Drop()
	next(t, s.events, "connect "+id)
	cl, ok := srv.Clients.Get("xiaozhi-hub")
	if !ok {
		t.Fatal("no hub client at the broker")
	}
	_ = srv.DisconnectClient(cl, packets.ErrAdministrativeAction)
	next(t, s.events, "disconnect "+id+": the hub lost its connection")
	deadline := time.Now().Add(15 * time.Second)
	for {
		_ = d.Publish([]byte(`{"type":"listen"}`))
		select {
		case e := <-s.events:
			if e == "connect "+id {
				return
			}
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("the device was not learnt again after the hub reconnected")
		}
	}
}
