package server_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/xiaozhi-hub/hub/server"
	"github.com/xiaozhi-hub/hub/sim/mqttdevice"
)

// Each conversation of an MQTT device has its own session_id, as from the
// official gateway: the firmware ends its channel on a goodbye naming its
// current id, so ids shared across conversations let a late goodbye for
// one end the next. A device goodbye naming an earlier conversation does
// not end the open one.
func TestEachMQTTConversationHasItsOwnSessionID(t *testing.T) {
	h := mqttHub(t, "", nil)
	const id = "aa:00:00:00:4d:31"
	d := connectMQTT(t, mqttLogin(t, otaCheck(t, h, id, "uuid-4d-31")))
	serveMCP(t, d)
	h.readyTools(id)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()

	ch1, err := d.OpenAudio(ctx)
	if err != nil {
		t.Fatal(err)
	}
	first := d.SessionID()
	if err := ch1.Close(true); err != nil { // the device's goodbye
		t.Fatal(err)
	}
	waitFor(t, "the first UDP channel to close", func() bool { return h.metric(t, "xiaozhi_hub_udp_sessions") == 0 })
	ch2, err := d.OpenAudio(ctx)
	if err != nil {
		t.Fatal(err)
	}
	second := d.SessionID()
	if first == "" || second == first {
		t.Fatalf("two hellos on one MQTT connection got session ids %q and %q", first, second)
	}

	// A late goodbye for the first conversation, then a marker to know it
	// was handled (one device's messages are handled in order).
	if err := d.Publish(fmt.Appendf(nil, `{"session_id":%q,"type":"goodbye"}`, first)); err != nil {
		t.Fatal(err)
	}
	if err := d.Publish([]byte(`{"type":"marker-4d31"}`)); err != nil {
		t.Fatal(err)
	}
	h.waitEvent(id, "marker-4d31")
	if n := h.metric(t, "xiaozhi_hub_udp_sessions"); n != 1 || d.Audio() != ch2 {
		t.Fatalf("after a goodbye naming the earlier conversation: %v UDP sessions, device channel open %v", n, d.Audio() == ch2)
	}
	accepted := h.metric(t, `xiaozhi_hub_udp_datagrams_total{outcome="accepted"}`)
	if err := ch2.SendAudio([]byte{0xf8, 0xff, 0xfe}, 0); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the open conversation's audio", func() bool {
		return h.metric(t, `xiaozhi_hub_udp_datagrams_total{outcome="accepted"}`) == accepted+1
	})
}

// udp-sessions-per-address bounds the conversations of the devices at one
// MQTT address: over it, the address's least active one ends (its device
// gets the server's goodbye and closes its channel) and the new one works.
func TestUDPSessionsPerAddressIsASetting(t *testing.T) {
	h := mqttHub(t, "", func(c *server.Config) { c.UDPSessionsPerAddress = 1 })
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	var devs []*mqttdevice.Device
	for _, id := range []string{"aa:00:00:00:4d:41", "aa:00:00:00:4d:42"} {
		d := connectMQTT(t, mqttLogin(t, otaCheck(t, h, id, "uuid-"+id[12:14]+id[15:])))
		serveMCP(t, d)
		h.readyTools(id)
		devs = append(devs, d)
	}
	if _, err := devs[0].OpenAudio(ctx); err != nil {
		t.Fatal(err)
	}
	ch, err := devs[1].OpenAudio(ctx)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the first device's channel to be ended by the server's goodbye", func() bool { return devs[0].Audio() == nil })
	if err := ch.SendAudio([]byte{0xf8, 0xff, 0xfe}, 0); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the second device's audio", func() bool {
		return h.metric(t, `xiaozhi_hub_udp_datagrams_total{outcome="accepted"}`) == 1
	})
	if n := h.metric(t, "xiaozhi_hub_udp_sessions_reclaimed_total"); n != 1 {
		t.Fatalf("reclaimed %v", n)
	}
}
