package ota

import (
	"context"
	"testing"

	"github.com/xiaozhi-hub/hub"
)

func mqttOf(ans map[string]any) map[string]any {
	m, _ := ans["mqtt"].(map[string]any)
	return m
}

// loginOf is the MQTT CONNECT a device makes with the `mqtt` object of its
// OTA answer.
func loginOf(m map[string]any) (clientID, username, password string) {
	return m["client_id"].(string), m["username"].(string), m["password"].(string)
}

// With MQTT offered, an admitted device's OTA answer carries an `mqtt`
// object the firmware stores as is (every member name fits NVS, every
// value is set), whose login the hub then accepts; a device a person keeps
// on WebSocket, and a device not admitted, get none.
func TestOTAOffersMQTTToAdmittedDevices(t *testing.T) {
	s, _, _ := newService(t, func(o *Options) { o.Policy = PolicyToken; o.MQTT = &MQTT{Port: 1883} })
	const id, client = "aa:00:00:00:05:01", "uuid-5-1"
	_, ans := checkAs(t, s, id, client, "10.0.5.1:1")
	m := mqttOf(ans)
	want := map[string]any{"endpoint": "hub.local:1883", "client_id": "GID_xzhub@@@aa_00_00_00_05_01@@@uuid-5-1",
		"username": id, "password": tokenOf(ans), "publish_topic": "xz/up/" + id, "keepalive": float64(DefaultKeepalive)}
	if len(m) != len(want) {
		t.Fatalf("mqtt object %v, want %v", m, want)
	}
	for k, v := range want {
		if len(k) > 15 || m[k] != v || v == "" {
			t.Errorf("mqtt.%s = %v, want %v (names ≤ 15 characters, values set)", k, m[k], v)
		}
	}
	ctx := context.Background()
	cid, user, pass := loginOf(m)
	got, err := s.AuthorizeMQTT(ctx, cid, user, pass, "10.0.5.1:2")
	if err != nil || got.DeviceID != id || got.ClientID != client {
		t.Fatalf("the device's own login: %+v %v", got, err)
	}

	// Someone with the MAC but another Client-Id gets no login, and cannot
	// use the device's password under a client id naming another Client-Id.
	_, ans = checkAs(t, s, id, "uuid-stranger", "10.0.5.99:1")
	if mqttOf(ans) != nil {
		t.Fatalf("a stranger with the MAC got an MQTT login: %v", ans)
	}
	if _, err := s.AuthorizeMQTT(ctx, "GID_xzhub@@@aa_00_00_00_05_01@@@uuid-stranger", user, pass, "10.0.5.99:2"); hub.ErrorCode(err) != hub.EUNAUTHORIZED {
		t.Fatalf("the device's password under another Client-Id: %v", err)
	}
	if _, err := s.AuthorizeMQTT(ctx, cid, "aa:00:00:00:05:02", pass, "10.0.5.99:2"); hub.ErrorCode(err) != hub.EUNAUTHORIZED {
		t.Fatalf("the device's client id with another username: %v", err)
	}
	if _, err := s.AuthorizeMQTT(ctx, cid, user, pass+"x", "10.0.5.99:2"); hub.ErrorCode(err) != hub.EUNAUTHORIZED {
		t.Fatalf("a wrong password: %v", err)
	}

	if _, err := s.SetTransport(ctx, id, hub.TransportWebSocket); err != nil {
		t.Fatal(err)
	}
	_, ans = checkAs(t, s, id, client, "10.0.5.1:1")
	if mqttOf(ans) != nil || tokenOf(ans) == "" {
		t.Fatalf("a device kept on WebSocket got: %v", ans)
	}
	if _, err := s.SetTransport(ctx, id, "auto"); err != nil {
		t.Fatal(err)
	}
	if _, ans = checkAs(t, s, id, client, "10.0.5.1:1"); mqttOf(ans) == nil {
		t.Fatalf("back on auto, no mqtt: %v", ans)
	}
	if _, err := s.SetTransport(ctx, id, "carrier-pigeon"); hub.ErrorCode(err) != hub.EINVALID {
		t.Fatalf("unknown transport: %v", err)
	}

	// Revoking the device ends its MQTT login too.
	if _, err := s.Revoke(ctx, id); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AuthorizeMQTT(ctx, cid, user, pass, "10.0.5.1:2"); hub.ErrorCode(err) != hub.EUNAUTHORIZED {
		t.Fatalf("a revoked device's login: %v", err)
	}
}

// Under the activation policy a device waiting for approval gets a code
// and no MQTT login.
func TestNoMQTTBeforeApproval(t *testing.T) {
	s, _, _ := newService(t, func(o *Options) { o.MQTT = &MQTT{Host: "mqtt.example.com", Port: 8883} })
	_, ans := checkAs(t, s, "aa:00:00:00:05:03", "c", "10.0.5.3:1")
	if ans["activation"] == nil || mqttOf(ans) != nil {
		t.Fatalf("unapproved device: %v", ans)
	}
}

// Under the open policy the MQTT password must still be the device's
// token: the broker confines topics by the identity it proves.
func TestOpenPolicyStillChecksMQTTLogins(t *testing.T) {
	s, _, _ := newService(t, func(o *Options) { o.Policy = PolicyOpen; o.MQTT = &MQTT{Port: 1883} })
	_, ans := checkAs(t, s, "aa:00:00:00:05:04", "c", "10.0.5.4:1")
	cid, user, pass := loginOf(mqttOf(ans))
	ctx := context.Background()
	if _, err := s.AuthorizeMQTT(ctx, cid, user, pass, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AuthorizeMQTT(ctx, cid, user, "guess", ""); hub.ErrorCode(err) != hub.EUNAUTHORIZED {
		t.Fatalf("a guessed password under the open policy: %v", err)
	}
}

// Settings the firmware cannot use are refused at start-up.
func TestMQTTSettingsTheFirmwareCannotUse(t *testing.T) {
	for _, m := range []MQTT{{Port: 0}, {Port: 70000}, {Host: "::1", Port: 1883}, {Host: "[::1]", Port: 1883}, {Port: 1883, Keepalive: 5}} {
		st := &memStore{m: map[string]Trust{}}
		if _, err := New(context.Background(), Options{Store: st, SecretPath: t.TempDir() + "/s", MQTT: &m}); err == nil {
			t.Errorf("MQTT %+v accepted", m)
		}
	}
	// A request that reached the hub by an IPv6 literal cannot be told an
	// endpoint: the device stays on WebSocket.
	s, _, _ := newService(t, func(o *Options) {
		o.Policy = PolicyOpen
		o.MQTT = &MQTT{Port: 1883}
		o.PublicURL = "http://[fd00::1]:8000"
	})
	if _, ans := checkAs(t, s, "aa:00:00:00:05:05", "c", "10.0.5.5:1"); mqttOf(ans) != nil || tokenOf(ans) == "" {
		t.Fatalf("IPv6 host: %v", ans)
	}
}
