package mqttbroker

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/xiaozhi-hub/hub/sim/mqttdevice"
	"github.com/xiaozhi-hub/hub/udpaudio"
)

// TestHelloAndUDPAudioEndToEnd plays the hub's part by hand: a device on
// the broker sends hello version 3, gets a server hello with a udpaudio
// session, and audio goes both ways, each side decrypting by its own rules;
// the server goodbye needs the exact session id.
func TestHelloAndUDPAudioEndToEnd(t *testing.T) {
	b, h := startBroker(t, nil)
	audio, err := udpaudio.Listen("127.0.0.1:0", udpaudio.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	wg.Go(func() { _ = audio.Run(ctx) })

	id := "aa:bb:cc:dd:ee:01"
	dev := connect(t, deviceConfig(t, b, id))
	expectEvent(t, h, "connect "+id)

	opened := make(chan *mqttdevice.Channel, 1)
	wg.Go(func() {
		ch, err := dev.OpenAudio(ctx)
		if err != nil {
			t.Errorf("OpenAudio: %v", err)
		}
		opened <- ch
	})
	hello := next(t, h.messages, "the device hello")
	if hello != (message{id, mqttdevice.Hello}) {
		t.Fatalf("hub got %+v", hello)
	}
	sess, err := audio.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	reply, _ := json.Marshal(map[string]any{
		"type": "hello", "transport": "udp", "session_id": "5e55",
		"audio_params": map[string]any{"format": "opus", "sample_rate": 24000, "channels": 1, "frame_duration": 60},
		"udp":          sess.Hello("127.0.0.1", int(audio.Addr().Port())),
	})
	if err := b.Publish(id, reply); err != nil {
		t.Fatal(err)
	}
	ch := next(t, opened, "the audio channel")
	if ch == nil {
		t.FailNow()
	}
	if dev.SessionID() != "5e55" {
		t.Fatalf("device session id %q", dev.SessionID())
	}

	for i := byte(1); i <= 3; i++ {
		up := bytes.Repeat([]byte{i}, 40+int(i))
		if err := ch.SendAudio(up, 0); err != nil {
			t.Fatal(err)
		}
		f := next(t, sess.Frames(), "an uplink frame")
		if !bytes.Equal(f.Opus, up) || f.Sequence != uint32(i) {
			t.Fatalf("uplink %d: %v seq %d", i, f.Opus, f.Sequence)
		}
		if err := sess.Send(append(up, 0xee), uint32(i)*60); err != nil {
			t.Fatal(err)
		}
		down, err := ch.Recv(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(down.Opus, append(up, 0xee)) || down.Timestamp != uint32(i)*60 {
			t.Fatalf("downlink %d as the device decrypted it: %v ts %d", i, down.Opus, down.Timestamp)
		}
	}

	// MCP still flows over MQTT while audio is open.
	_ = b.Publish(id, []byte(mcpInit))
	if m := next(t, dev.Messages(), "the MCP request"); string(m.Payload) != mcpInit {
		t.Fatalf("device got %q", m.Payload)
	}

	_ = b.Publish(id, []byte(`{"type":"goodbye","session_id":"other"}`))
	_ = b.Publish(id, []byte(`{"type":"mcp","marker":1}`))
	next(t, dev.Messages(), "the marker after the wrong goodbye")
	if dev.Audio() == nil {
		t.Fatal("a goodbye with another session id closed the audio channel")
	}
	_ = b.Publish(id, []byte(`{"type":"goodbye","session_id":"5e55"}`))
	next(t, ch.Closed(), "the device to close its audio channel")
}
