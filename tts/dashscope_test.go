package tts

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/coder/websocket"
	"github.com/xiaozhi-hub/hub"
)

func dsServer(t testing.TB, handle func(r *http.Request, c *websocket.Conn)) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		handle(r, c)
	}))
	t.Cleanup(srv.Close)
	return "ws" + strings.TrimPrefix(srv.URL, "http")
}

// CosyVoice: run-task with model, voice and PCM format; the text in
// continue-task; finish-task; the audio frames (split mid-sample) joined.
func TestCosyVoice(t *testing.T) {
	url := dsServer(t, func(r *http.Request, c *websocket.Conn) {
		ctx := context.Background()
		if r.Header.Get("Authorization") != "Bearer sk-ds" {
			t.Errorf("Authorization %q", r.Header.Get("Authorization"))
		}
		var got []map[string]any
		for range 3 {
			_, b, err := c.Read(ctx)
			if err != nil {
				t.Error(err)
				return
			}
			var m map[string]any
			_ = json.Unmarshal(b, &m)
			got = append(got, m)
			if len(got) == 1 {
				task := m["header"].(map[string]any)["task_id"].(string)
				_ = c.Write(ctx, websocket.MessageText, []byte(`{"header":{"task_id":"`+task+`","event":"task-started"},"payload":{}}`))
			}
		}
		p := got[0]["payload"].(map[string]any)
		params := p["parameters"].(map[string]any)
		if p["model"] != "cosyvoice-v2" || params["voice"] != "longxiaochun_v2" || params["format"] != "pcm" || params["sample_rate"] != float64(24000) {
			t.Errorf("run-task %v", got[0])
		}
		if got[1]["payload"].(map[string]any)["input"].(map[string]any)["text"] != "你好。" || got[2]["header"].(map[string]any)["action"] != "finish-task" {
			t.Errorf("continue/finish %v %v", got[1], got[2])
		}
		b := make([]byte, 2*4800)
		for i := range 4800 {
			binary.LittleEndian.PutUint16(b[2*i:], uint16(int16(i)))
		}
		_ = c.Write(ctx, websocket.MessageBinary, b[:1001])
		_ = c.Write(ctx, websocket.MessageBinary, b[1001:])
		_ = c.Write(ctx, websocket.MessageText, []byte(`{"header":{"task_id":"x","event":"task-finished"},"payload":{}}`))
		_, _, _ = c.Read(ctx)
	})
	s, err := (&DashScope{URL: url, APIKey: "sk-ds"}).Synthesize(context.Background(), "你好。", "")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var all []int16
	for {
		pcm, err := s.Read(context.Background())
		if err != nil {
			break
		}
		all = append(all, pcm...)
	}
	if len(all) != 4800 || all[4799] != 4799 {
		t.Fatalf("%d samples", len(all))
	}
	failing := dsServer(t, func(r *http.Request, c *websocket.Conn) {
		_, _, _ = c.Read(context.Background())
		_ = c.Write(context.Background(), websocket.MessageText, []byte(`{"header":{"task_id":"x","event":"task-failed","error_code":"InvalidParameter","error_message":"voice not found"},"payload":{}}`))
	})
	if _, err := (&DashScope{URL: failing}).Synthesize(context.Background(), "x", "nobody"); hub.ErrorCode(err) != hub.EUNAVAILABLE || !strings.Contains(err.Error(), "voice not found") {
		t.Fatalf("task-failed: %v", err)
	}
}
