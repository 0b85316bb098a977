package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
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

// notConfiguredSentence has a device start listening and returns the
// sentence the hub shows and says.
func notConfiguredSentence(t *testing.T, c *websocket.Conn) string {
	t.Helper()
	send(t, c, `{"session_id":"x","type":"listen","state":"start","mode":"auto"}`)
	for range 4 {
		var m struct{ Type, State, Text string }
		if err := json.Unmarshal([]byte(readText(t, c)), &m); err != nil {
			t.Fatal(err)
		}
		if m.State == "sentence_start" {
			return m.Text
		}
	}
	t.Fatal("no sentence")
	return ""
}

// The hub speaks to a device in the device's language: an en-US device
// (its OTA check says so, docs/protocol.md §2.1) is told in English what
// to configure; a device whose hello says en-US (the browser test device
// on an English page) too; a zh-CN device, and one that never said, in
// Chinese.
func TestVoiceSpeaksTheDevicesLanguage(t *testing.T) {
	h := startHub(t, "", nil)
	const enOTA, enHello, zhOTA, unknown = "aa:00:00:00:5e:11", "aa:00:00:00:5e:12", "aa:00:00:00:5e:13", "aa:00:00:00:5e:14"
	for id, lang := range map[string]string{enOTA: "en-US", zhOTA: "zh-CN"} {
		h.rawDevice(id).CloseNow() // known to the hub: it has connected before
		info := `{"version":2,"language":"` + lang + `","mac_address":"` + id + `","chip_model_name":"esp32s3","application":{"version":"2.4.2"}}`
		if r := h.otaRequest("POST", "/xiaozhi/ota/", id, map[string]string{"Client-Id": "raw-" + id, "Accept-Language": lang}, info); r.StatusCode != 200 {
			t.Fatalf("OTA check: %d %s", r.StatusCode, r.body)
		}
	}
	for id, want := range map[string]string{enOTA: "Voice is not configured", zhOTA: "这个 hub 还没有配置语音", unknown: "这个 hub 还没有配置语音"} {
		if got := notConfiguredSentence(t, h.rawDevice(id)); !strings.HasPrefix(got, want) {
			t.Errorf("device %s was told %q, want %q…", id, got, want)
		}
	}
	c := h.rawDeviceHello(enHello, `{"type":"hello","version":1,"features":{"mcp":true},"transport":"websocket","language":"en-US","audio_params":{"format":"opus","sample_rate":16000,"channels":1,"frame_duration":60}}`)
	if got := notConfiguredSentence(t, c); !strings.HasPrefix(got, "Voice is not configured") {
		t.Errorf("the device whose hello says en-US was told %q", got)
	}
}

// rawDeviceHello connects a raw WebSocket device that says hello (with
// the Protocol-Version header of the hello's version).
func (h *testHub) rawDeviceHello(id, hello string) *websocket.Conn {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var v struct{ Version int }
	_ = json.Unmarshal([]byte(hello), &v)
	hdr := http.Header{"Device-Id": {id}, "Client-Id": {"raw-" + id}, "Protocol-Version": {strconv.Itoa(max(v.Version, 1))}}
	c, _, err := websocket.Dial(ctx, h.DeviceURL(), &websocket.DialOptions{HTTPHeader: hdr})
	if err != nil {
		h.t.Fatalf("dial: %v", err)
	}
	h.t.Cleanup(func() { c.CloseNow() })
	c.SetReadLimit(1 << 20)
	send(h.t, c, hello)
	if _, data, err := c.Read(ctx); err != nil || !strings.Contains(string(data), `"transport":"websocket"`) {
		h.t.Fatalf("server hello: %s %v", data, err)
	}
	return c
}
