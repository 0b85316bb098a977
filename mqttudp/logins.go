package mqttudp

import (
	"context"
	"net/http"
	"time"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/mqttbroker"
	"github.com/xiaozhi-hub/hub/mqttremote"
)

// authenticate checks an embedded broker's CONNECT (trust is set by Wire,
// before Start serves the broker).
func (t *Transport) authenticate(clientID, username, password, remote string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	id, err := t.trust.AuthorizeMQTT(ctx, clientID, username, password, hub.Host(remote))
	return id.DeviceID, err
}

// AuthHandler is the external broker's authenticator (to be mounted at
// POST /mqtt/auth, behind mqtt-broker-secret, not the admin token); nil
// with the embedded broker.
func (t *Transport) AuthHandler() http.Handler {
	if t.router == nil {
		return nil
	}
	return mqttremote.AuthHandler(t.opts.Settings.BrokerSecret, func(ctx context.Context, clientID, username, password, remote string) error {
		_, err := t.trust.AuthorizeMQTT(ctx, clientID, username, password, remote)
		if err != nil {
			t.refused(mqttbroker.Refusal{ClientID: clientID, Username: username, Remote: remote, Reason: hub.ErrorMessage(err)})
		}
		return err
	}, t.log)
}

// refused counts a refused MQTT client in the handshake metrics and
// reports it (mqttbroker.Reporter) within the shared refusal limits.
func (t *Transport) refused(r mqttbroker.Refusal) {
	t.opts.Metrics.Handshake("mqtt_refused")
	mqttbroker.Reporter{Reports: t.opts.Refusals, Devices: t.opts.Devices, Log: t.log}.Report(r)
}
