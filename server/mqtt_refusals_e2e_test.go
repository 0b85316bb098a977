package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xiaozhi-hub/hub/sim/mqttdevice"
)

// logCounter is the test's log, counting the hub's lines that contain a
// text.
type logCounter struct {
	testing.TB
	text string
	n    atomic.Int64
}

func (l *logCounter) Log(args ...any) {
	if strings.Contains(fmt.Sprint(args...), l.text) {
		l.n.Add(1)
	}
	l.TB.Log(args...)
}

type deviceEvent struct {
	Type string
	Time string
	Data json.RawMessage
}

func (h *testHub) events(id string) []deviceEvent {
	h.t.Helper()
	_, body := h.call("GET", "/api/devices/"+id+"/events?limit=1000", nil)
	raw, _ := json.Marshal(body["events"])
	var evs []deviceEvent
	if err := json.Unmarshal(raw, &evs); err != nil {
		h.t.Fatal(err)
	}
	return evs
}

func countType(evs []deviceEvent, typ string) int {
	n := 0
	for _, e := range evs {
		if e.Type == typ {
			n++
		}
	}
	return n
}

// 1,500 logins naming a device, without credentials, leave the device's
// event history in place: their refusals are logged and recorded as events
// up to the per-device and per-address limit (10), and counted beyond it.
func TestMQTTBadLoginsDoNotReplaceEventHistory(t *testing.T) {
	lt := &logCounter{TB: t, text: `msg="MQTT refused"`}
	h := mqttHub(lt, "", nil)
	const id = "aa:00:00:00:4d:61"
	d := connectMQTT(t, mqttLogin(t, otaCheck(t, h, id, "uuid-4d-61")))
	serveMCP(t, d)
	h.readyTools(id)
	before := h.events(id)
	if len(before) == 0 {
		t.Fatal("the device has no events to keep")
	}

	const attempts = 1500
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for i := range attempts {
		_, err := mqttdevice.Connect(ctx, mqttdevice.Config{Endpoint: h.MQTTAddr(), ClientID: fmt.Sprintf("attacker-%d", i), Username: id})
		if !errors.Is(err, mqttdevice.ErrRefused) {
			t.Fatalf("login %d without credentials: %v", i, err)
		}
	}
	// Each refusal is reported, or counted, before its CONNACK: beyond 20
	// failures the address's logins are not even checked.
	unreported := int(h.metric(t, "xiaozhi_hub_refusals_unreported_total"))
	throttled := int(h.metric(t, `xiaozhi_hub_mqtt_dropped_total{reason="login_throttled"}`))
	reported := attempts - unreported - throttled
	var after []deviceEvent
	waitFor(t, "the reported refusals among the device's events", func() bool {
		after = h.events(id)
		return countType(after, "connection_refused") == reported || len(after) == 1000 // the store keeps 1,000 a device
	})
	for _, e := range before {
		found := false
		for _, a := range after {
			found = found || a.Type == e.Type && a.Time == e.Time && string(a.Data) == string(e.Data)
		}
		if !found {
			t.Fatalf("event %s at %s is gone after the bad logins (%d events before, %d after)", e.Type, e.Time, len(before), len(after))
		}
	}
	t.Logf("%d bad logins: %d reported (events and log lines), %d left out, %d not checked", attempts, reported, unreported, throttled)
	if reported < 1 || reported > 11 {
		t.Fatalf("%d of %d refusals reported (%d unreported, %d not checked), want about 10", reported, attempts, unreported, throttled)
	}
	if n := lt.n.Load(); n != int64(reported) {
		t.Fatalf("%d log lines for %d reported refusals", n, reported)
	}
	if st, body := h.call("GET", "/api/devices/"+id, nil); st != 200 || body["online"] != true {
		t.Fatalf("the device after the bad logins: %d %v", st, body)
	}
}

// A logged-in device that publishes to another device's topic in a loop
// is disconnected after 10 refusals within a minute, and its refusals
// cost a bounded number of events and log lines.
func TestMQTTRefusedPublishLoopDisconnects(t *testing.T) {
	lt := &logCounter{TB: t, text: `msg="MQTT refused"`}
	h := mqttHub(lt, "", nil)
	const victim, attacker = "aa:00:00:00:4d:71", "aa:00:00:00:4d:72"
	v := connectMQTT(t, mqttLogin(t, otaCheck(t, h, victim, "uuid-4d-71")))
	dev := serveMCP(t, v)
	h.readyTools(victim)
	login := mqttLogin(t, otaCheck(t, h, attacker, "uuid-4d-72"))
	a := connectMQTT(t, login)
	serveMCP(t, a)
	h.readyTools(attacker)

	const most = 100_000
	deadline := time.Now().Add(20 * time.Second)
	sent := 0
	for ; sent < most && time.Now().Before(deadline); sent++ {
		if a.PublishTo("xz/down/"+victim, []byte(`{"type":"mcp","payload":{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"self.reboot"}}}`)) != nil {
			break
		}
	}
	select {
	case <-a.Done():
	case <-time.After(20 * time.Second):
		t.Fatalf("the device is still connected after %d refused publishes", sent)
	}
	h.waitEvent(attacker, "the broker refused the client's packets")
	t.Logf("disconnected after %d refused publishes were written; %d log lines", sent, lt.n.Load())
	if n := countType(h.events(attacker), "connection_refused"); n < 1 || n > 11 {
		t.Fatalf("%d connection_refused events for %d refused publishes", n, sent)
	}
	if n := lt.n.Load(); n > 11 {
		t.Fatalf("%d log lines for %d refused publishes", n, sent)
	}
	if st, body := h.call("POST", "/api/devices/"+victim+"/tools/self.light.set/call", map[string]any{"arguments": map[string]any{"on": true}}); st != 200 || !dev.lightOn() {
		t.Fatalf("the victim after the attack: %d %v", st, body)
	}
	if m := h.metric(t, `xiaozhi_hub_mqtt_dropped_total{reason="disconnected_for_refusals"}`); m != 1 {
		t.Fatalf("disconnected_for_refusals = %v", m)
	}
}
