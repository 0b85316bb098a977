// Package mqttremote connects the hub to an external MQTT broker (EMQX) as
// an MQTT 5 client, for deployments that run their own broker
// (mqtt-broker). It offers the hub what the embedded broker offers: a
// device's connect, messages and disconnect by device id, and Publish.
//
// The broker does what the embedded one does itself (docs/emqx.md):
// authenticates devices by asking the hub (AuthHandler), confines each to
// publishing on xz/up/<username>, subscribes it to xz/down/<username> (EMQX
// auto-subscribe: the firmware never subscribes), and publishes client
// connected/disconnected event messages on $SYS, from which the hub learns
// presence. Device messages arrive through the shared subscription
// $share/<group>/xz/up/+.
package mqttremote

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/eclipse/paho.golang/autopaho"
	"github.com/eclipse/paho.golang/paho"
	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/protocol"
)

// Device is a device's connection as the broker reported it.
type Device struct {
	DeviceID string
	ClientID string // its MQTT client id
	Remote   string // its address, when the broker said
	closed   bool   // the hub ended its session (Disconnect); still at the broker
}

// Config configures a Client. URL and the callbacks are required.
type Config struct {
	// URL is the broker: mqtt://[user:password@]host:port (tls:// for TLS).
	URL      *url.URL
	ClientID string // the hub's own client id (default "xiaozhi-hub")
	Group    string // shared-subscription group (default "xiaozhi-hub")
	// MaxMessage is the largest device payload passed on (default 64 KiB).
	MaxMessage int

	OnConnect    func(Device)
	OnMessage    func(deviceID string, payload []byte)
	OnDisconnect func(deviceID, reason string)
	Logger       *slog.Logger
}

// Stats counts what the client dropped.
type Stats struct {
	Oversized, NotJSON, Foreign uint64
}

// Client is the hub's connection to the broker. Run serves it.
type Client struct {
	cfg Config
	log *slog.Logger

	oversized, notJSON, foreign atomic.Uint64

	mu      sync.Mutex
	cm      *autopaho.ConnectionManager
	devices map[string]Device // connected devices, as last reported
}

// New checks cfg; it connects nothing until Run.
func New(cfg Config) (*Client, error) {
	if cfg.URL == nil || cfg.OnConnect == nil || cfg.OnMessage == nil || cfg.OnDisconnect == nil {
		return nil, errors.New("mqttremote: URL and the callbacks are required")
	}
	switch cfg.URL.Scheme {
	case "mqtt", "tcp", "tls", "mqtts", "ssl":
	default:
		return nil, hub.Errorf(hub.EINVALID, "mqtt-broker: %q must start with mqtt:// or tls://", cfg.URL.Redacted())
	}
	if cfg.ClientID == "" {
		cfg.ClientID = "xiaozhi-hub"
	}
	if cfg.Group == "" {
		cfg.Group = "xiaozhi-hub"
	}
	if cfg.MaxMessage <= 0 {
		cfg.MaxMessage = 64 << 10
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Client{cfg: cfg, log: cfg.Logger, devices: map[string]Device{}}, nil
}

// The topics the client subscribes to.
func (c *Client) subscriptions() []paho.SubscribeOptions {
	return []paho.SubscribeOptions{
		{Topic: "$share/" + c.cfg.Group + "/" + protocol.UplinkTopic("+")},
		{Topic: "$SYS/brokers/+/clients/+/connected"},
		{Topic: "$SYS/brokers/+/clients/+/disconnected"},
	}
}

// Run connects, reconnecting with back-off, until ctx ends. While the hub
// has no connection to the broker, the devices it knew are reported
// offline; they are learnt again from their next connect or message.
func (c *Client) Run(ctx context.Context) error {
	pass, _ := c.cfg.URL.User.Password()
	u := *c.cfg.URL
	u.User = nil
	if u.Scheme == "mqtts" || u.Scheme == "ssl" {
		u.Scheme = "tls"
	}
	cm, err := autopaho.NewConnection(ctx, autopaho.ClientConfig{
		ServerUrls: []*url.URL{&u}, KeepAlive: 30, CleanStartOnInitialConnection: true,
		ConnectUsername: c.cfg.URL.User.Username(), ConnectPassword: []byte(pass),
		ReconnectBackoff: func(n int) time.Duration { return min(time.Duration(n+1)*time.Second, 30*time.Second) },
		OnConnectionUp: func(cm *autopaho.ConnectionManager, _ *paho.Connack) {
			sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			if _, err := cm.Subscribe(sctx, &paho.Subscribe{Subscriptions: c.subscriptions()}); err != nil {
				c.log.Warn("cannot subscribe at the MQTT broker", "err", err)
				return
			}
			c.log.Info("connected to the MQTT broker", "broker", u.Host)
		},
		OnConnectionDown: func() bool {
			c.log.Warn("lost the connection to the MQTT broker; reconnecting", "broker", u.Host)
			c.forgetAll("the hub lost its connection to the MQTT broker")
			return true
		},
		OnConnectError: func(err error) { c.log.Warn("cannot connect to the MQTT broker", "broker", u.Host, "err", err) },
		ClientConfig: paho.ClientConfig{
			ClientID:          c.cfg.ClientID,
			OnPublishReceived: []func(paho.PublishReceived) (bool, error){c.received},
		},
	})
	if err != nil {
		return fmt.Errorf("mqttremote: %w", err)
	}
	c.mu.Lock()
	c.cm = cm
	c.mu.Unlock()
	<-ctx.Done()
	dctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = cm.Disconnect(dctx)
	<-cm.Done()
	c.forgetAll("the hub is shutting down")
	return nil
}

// received routes one PUBLISH from the broker.
func (c *Client) received(p paho.PublishReceived) (bool, error) {
	topic, payload := p.Packet.Topic, p.Packet.Payload
	if rest, ok := strings.CutPrefix(topic, "$SYS/brokers/"); ok {
		c.event(rest, payload)
		return true, nil
	}
	id, ok := strings.CutPrefix(topic, protocol.UplinkTopic(""))
	if !ok || id == "" || strings.Contains(id, "/") {
		c.foreign.Add(1)
		return true, nil
	}
	if len(payload) > c.cfg.MaxMessage {
		c.oversized.Add(1)
		return true, nil
	}
	if t := bytes.TrimLeft(payload, " \t\r\n"); len(t) == 0 || t[0] != '{' || !utf8.Valid(t) {
		c.notJSON.Add(1)
		return true, nil
	}
	c.mu.Lock()
	d, known := c.devices[id]
	if !known { // its connect event was missed (the hub reconnected): it is here
		d = Device{DeviceID: id}
	}
	fresh := !known || d.closed // the hub ended its session: a new one starts
	d.closed = false
	c.devices[id] = d
	c.mu.Unlock()
	if fresh {
		c.cfg.OnConnect(d)
	}
	c.cfg.OnMessage(id, bytes.Clone(payload))
	return true, nil
}

// event handles an EMQX client event message: topic
// <node>/clients/<clientid>/connected|disconnected, payload JSON with
// clientid, username, ipaddress and (disconnected) reason.
func (c *Client) event(rest string, payload []byte) {
	parts := strings.Split(rest, "/")
	if len(parts) != 4 || parts[1] != "clients" {
		return
	}
	var ev struct {
		ClientID  string `json:"clientid"`
		Username  string `json:"username"`
		IPAddress string `json:"ipaddress"`
		Reason    string `json:"reason"`
	}
	if json.Unmarshal(payload, &ev) != nil || ev.ClientID == c.cfg.ClientID || ev.Username == "" {
		return
	}
	id, err := protocol.ParseMQTTLogin(ev.ClientID, ev.Username, "")
	if err != nil {
		return // not a device the hub issued a login to
	}
	switch parts[3] {
	case "connected":
		d := Device{DeviceID: id.DeviceID, ClientID: ev.ClientID, Remote: ev.IPAddress}
		c.mu.Lock()
		_, had := c.devices[d.DeviceID]
		c.devices[d.DeviceID] = d
		c.mu.Unlock()
		if had {
			c.cfg.OnDisconnect(d.DeviceID, "a newer connection of the device replaced it")
		}
		c.cfg.OnConnect(d)
	case "disconnected":
		c.mu.Lock()
		_, had := c.devices[id.DeviceID]
		delete(c.devices, id.DeviceID)
		c.mu.Unlock()
		if had {
			reason := "the device disconnected"
			if ev.Reason != "" {
				reason += " (" + ev.Reason + ")"
			}
			c.cfg.OnDisconnect(id.DeviceID, reason)
		}
	}
}

func (c *Client) forgetAll(reason string) {
	c.mu.Lock()
	ids := make([]string, 0, len(c.devices))
	for id := range c.devices {
		ids = append(ids, id)
	}
	clear(c.devices)
	c.mu.Unlock()
	for _, id := range ids {
		c.cfg.OnDisconnect(id, reason)
	}
}

// Publish sends payload to the device's downlink topic, QoS 0.
func (c *Client) Publish(deviceID string, payload []byte) error {
	c.mu.Lock()
	d, known := c.devices[deviceID]
	cm := c.cm
	c.mu.Unlock()
	known = known && !d.closed
	if cm == nil || !known {
		return hub.Errorf(hub.EOFFLINE, "device %s is not connected over MQTT", deviceID)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := cm.Publish(ctx, &paho.Publish{Topic: protocol.DownlinkTopic(deviceID), Payload: payload}); err != nil {
		return fmt.Errorf("mqttremote: publish to %s: %w", deviceID, err)
	}
	return nil
}

// Disconnect notes that the hub ended the device's session (the hub
// cannot close a connection at an external broker: EMQX's REST API can,
// see docs/emqx.md). Nothing is published to it any more; its next
// message starts a new session (OnConnect).
func (c *Client) Disconnect(deviceID string) {
	c.mu.Lock()
	if d, ok := c.devices[deviceID]; ok {
		d.closed = true
		c.devices[deviceID] = d
	}
	c.mu.Unlock()
}

// Reopen notes that the hub may serve the device again (after Disconnect,
// when another hub node that served it is gone): Publish reaches it. It
// reports false if the broker has not said the device is connected.
func (c *Client) Reopen(deviceID string) (Device, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	d, ok := c.devices[deviceID]
	if ok {
		d.closed = false
		c.devices[deviceID] = d
	}
	return d, ok
}

// Devices lists the devices the broker says are connected, except those
// whose session the hub ended (Disconnect).
func (c *Client) Devices() []Device {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]Device, 0, len(c.devices))
	for _, d := range c.devices {
		if !d.closed {
			out = append(out, d)
		}
	}
	return out
}

// Stats returns the drop counters.
func (c *Client) Stats() Stats {
	return Stats{Oversized: c.oversized.Load(), NotJSON: c.notJSON.Load(), Foreign: c.foreign.Load()}
}
