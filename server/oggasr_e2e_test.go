package server_test

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/xiaozhi-hub/hub/catalog"
	"github.com/xiaozhi-hub/hub/sim"
)

// pushToTalk is one push-to-talk turn of a raw device: listen start, the
// frames, listen stop; it returns the texts the hub sent until tts stop.
func pushToTalk(t *testing.T, c *websocket.Conn, frames [][]byte) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	send(t, c, `{"session_id":"s","type":"listen","state":"start","mode":"manual"}`)
	for _, f := range frames {
		if err := c.Write(ctx, websocket.MessageBinary, f); err != nil {
			t.Fatal(err)
		}
	}
	send(t, c, `{"session_id":"s","type":"listen","state":"stop"}`)
	var texts []string
	for {
		typ, data, err := c.Read(ctx)
		if err != nil {
			t.Fatalf("read: %v (so far %v)", err, texts)
		}
		if typ == websocket.MessageText {
			texts = append(texts, string(data))
			if strings.Contains(string(data), `"state":"stop"`) {
				return strings.Join(texts, "\n")
			}
		}
	}
}

// With asr-audio ogg-opus, set while the hub runs, a push-to-talk turn's
// audio reaches the recognizer as the device sent it: an Ogg Opus file the
// stand-in server reads page by page (checksums, granule positions, end of
// stream) and decodes to the 1.2 s spoken, its packets byte for byte the
// device's, a packet with invalid framing left out; before the change, and
// after it is set back, the upload is WAV. An unknown value is refused with
// the allowed ones.
func TestTalkOggOpusUpload(t *testing.T) {
	const lampID, talkerID = "aa:00:00:00:7a:41", "aa:00:00:00:7a:42"
	p := newProviders(t, catalog.Name(lampID, "self.lamp.turn_on"))
	h := talkingHub(t, p, nil)
	lamp := h.device(sim.Config{DeviceID: lampID, Lamp: true})
	h.readyTools(lampID)
	c := h.rawDevice(talkerID)
	frames := speech(t)
	turn := func(want string, frames [][]byte) {
		t.Helper()
		if got := pushToTalk(t, c, frames); !strings.Contains(got, `{"type":"stt","text":"打开客厅的灯"}`) {
			t.Fatalf("the device got %s", got)
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.upload != want || p.heardMs < 1100 || p.heardMs > 1300 {
			t.Fatalf("the recognizer got %q of %d ms, want %s of 1200", p.upload, p.heardMs, want)
		}
	}
	turn("wav", frames)

	for value, want := range map[string]int{"mp3": 422, "ogg-opus": 200} {
		st, body := h.call("PUT", "/api/settings", map[string]any{"asr-audio": value})
		if st != want || st == 422 && !strings.Contains(fmt.Sprint(body), "is not one of wav, ogg-opus") {
			t.Fatalf("PUT asr-audio %s: %d %v", value, st, body)
		}
	}
	bad := []byte{1<<3 | 1, 1, 2, 3} // code 1 with an odd length (RFC 6716 §3.4, R3)
	withBad := append(slices.Clone(frames[:10]), append([][]byte{bad}, frames[10:]...)...)
	turn("ogg", withBad)
	p.mu.Lock()
	if !slices.EqualFunc(p.packets, frames, bytes.Equal) {
		t.Errorf("the Ogg file holds %d packets, not the device's %d", len(p.packets), len(frames))
	}
	p.mu.Unlock()
	if !lamp.LampOn() {
		t.Fatal("the lamp is still off")
	}

	if st, body := h.call("PUT", "/api/settings", map[string]any{"asr-audio": nil}); st != 200 {
		t.Fatalf("removing asr-audio: %d %v", st, body)
	}
	turn("wav", frames)
	h.waitEvent(talkerID, "outcome:ok")
}
