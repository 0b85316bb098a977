package server_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/xiaozhi-hub/hub/server"
)

// readText reads the next text frame.
func readText(t *testing.T, c *websocket.Conn) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		typ, data, err := c.Read(ctx)
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		if typ == websocket.MessageText {
			return string(data)
		}
	}
}

// With no speech providers configured, a device that starts listening is
// answered at once with what to configure (ending with tts stop); when it
// listens again it is not answered again (that would loop), and the
// conversation ends after conversation-timeout: over WebSocket with the
// connection (status 1000). The turn is recorded.
func TestNoVoiceConfiguredOverWebSocket(t *testing.T) {
	h := startHub(t, "", func(c *server.Config) { c.ConversationTimeout = time.Second })
	const id = "aa:00:00:00:5e:01"
	c := h.rawDevice(id)
	send(t, c, `{"session_id":"x","type":"listen","state":"start","mode":"auto"}`)
	var got []string
	for range 4 {
		got = append(got, readText(t, c))
	}
	all := strings.Join(got, "\n")
	if !strings.HasPrefix(got[0], `{"type":"tts","state":"start"}`) || !strings.Contains(all, `"state":"sentence_start"`) ||
		!strings.Contains(all, "asr-provider") || got[3] != `{"type":"tts","state":"stop"}` {
		t.Fatalf("the device received:\n%s", all)
	}
	// Auto mode listens again after tts stop: nobody talks, the conversation ends.
	send(t, c, `{"session_id":"x","type":"listen","state":"start","mode":"auto"}`)
	if code, reason := closedWith(t, c); code != websocket.StatusNormalClosure {
		t.Fatalf("closed with %d %q, want 1000", code, reason)
	}
	h.waitEvent(id, "not_configured")
	if n := h.metric(t, `xiaozhi_hub_voice_turns_total{outcome="not_configured"}`); n != 1 {
		t.Fatalf("voice turns not_configured = %v", n)
	}
}

// Over MQTT the same ends with a goodbye carrying the conversation's
// session id, and the device stays online and controllable.
func TestNoVoiceConfiguredOverMQTT(t *testing.T) {
	h := mqttHub(t, "", func(c *server.Config) { c.ConversationTimeout = time.Second })
	const id = "aa:00:00:00:5e:02"
	d := connectMQTT(t, mqttLogin(t, otaCheck(t, h, id, "uuid-5e-02")))
	dev := serveMCP(t, d)
	h.readyTools(id)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ch, err := d.OpenAudio(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sid := d.SessionID()
	listen := []byte(`{"session_id":"` + sid + `","type":"listen","state":"start","mode":"auto"}`)
	if err := d.Publish(listen); err != nil {
		t.Fatal(err)
	}
	var got []string
	for len(got) < 4 {
		select {
		case m := <-dev.other:
			if strings.Contains(m, `"type":"tts"`) || strings.Contains(m, `"type":"llm"`) {
				got = append(got, m)
			}
		case <-ctx.Done():
			t.Fatalf("the device received only %v", got)
		}
	}
	if got[3] != `{"type":"tts","state":"stop"}` || !strings.Contains(strings.Join(got, ""), "tts-provider") {
		t.Fatalf("the device received %v", got)
	}
	if err := d.Publish(listen); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ch.Closed(): // the device accepted the server's goodbye (exact session id)
	case <-ctx.Done():
		t.Fatal("no goodbye with the session id")
	}
	if st, _ := h.call("POST", "/api/devices/"+id+"/tools/self.light.set/call", map[string]any{"arguments": map[string]any{"on": true}}); st != 200 || !dev.lightOn() {
		t.Fatalf("after the conversation the MQTT device must stay controllable: %d", st)
	}
}
