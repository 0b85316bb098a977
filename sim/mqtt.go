package sim

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/xiaozhi-hub/hub/sim/mqttdevice"
)

// MQTT mode follows firmware 2.4.2's mqtt_protocol.cc (docs/protocol.md §4):
// the device connects at boot and stays connected while idle, serving MCP
// (and taking IoT commands) over it; a conversation opens with a hello and
// its audio goes over UDP (OpenConversation).

// dialMQTT connects the device's MQTT session: open at once, no hello.
func (d *Device) dialMQTT(ctx context.Context) (*link, error) {
	if d.cfg.MQTT.Endpoint == "" {
		return nil, errors.New("sim: transport mqtt without an MQTT login (make the OTA check first, or set Config.MQTT)")
	}
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	mq, err := mqttdevice.Connect(dctx, d.cfg.MQTT)
	if err != nil {
		return nil, fmt.Errorf("sim: connect MQTT %s: %w", d.cfg.MQTT.Endpoint, err)
	}
	lctx, lcancel := context.WithCancel(context.Background())
	l := &link{mq: mq, ctx: lctx, cancel: lcancel, hello: make(chan struct{}), done: make(chan struct{}),
		timer: time.NewTimer(time.Hour), helloed: true}
	l.timer.Stop()
	close(l.hello)
	d.mu.Lock()
	d.link = l
	d.state = StateIdle
	d.connects++
	d.mu.Unlock()
	d.log.Info(logConnected, "transport", "mqtt", "endpoint", d.cfg.MQTT.Endpoint)
	return l, nil
}

// readMQTT hands every message to the device as the firmware's OnMessage
// does: everything but hello and goodbye (which mqttdevice handles)
// whatever the audio state.
func (d *Device) readMQTT(l *link) {
	defer func() {
		<-l.mq.Done()
		d.mu.Lock()
		d.state = StateIdle
		d.mu.Unlock()
		d.log.Debug("sim: MQTT session ended", "err", l.mq.Err())
	}()
	for {
		select {
		case m, ok := <-l.mq.Messages():
			if !ok { // closed as the session ends
				return
			}
			d.onText(l, m.Payload)
		case <-l.mq.Done():
			return
		}
	}
}

// OpenConversation starts a conversation the way a button press does:
// over MQTT, the hello and the UDP audio channel (after which legacy IoT
// firmware sends its descriptors); over WebSocket the connection is the
// conversation, so it only starts listening. It returns the UDP channel
// (nil over WebSocket).
func (d *Device) OpenConversation(ctx context.Context) (*mqttdevice.Channel, error) {
	l, err := d.current()
	if err != nil {
		return nil, err
	}
	if l.mq == nil {
		d.enterListening(l)
		return nil, nil
	}
	ch, err := l.mq.OpenAudio(ctx)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	d.sessionID = l.mq.SessionID()
	d.mu.Unlock()
	d.onChannelOpened(l)
	return ch, nil
}

// MQTTSession is the device's MQTT session, or nil when it is not on MQTT.
func (d *Device) MQTTSession() *mqttdevice.Device {
	l, err := d.current()
	if err != nil {
		return nil
	}
	return l.mq
}

// UseMQTT puts the device on MQTT with login, as if its OTA answer had
// carried it. Call it before Connect or Run.
func (d *Device) UseMQTT(login mqttdevice.Config) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.cfg.MQTT, d.transport = login, "mqtt"
}
