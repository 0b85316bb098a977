package asr

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/coder/websocket"
)

// BenchmarkUtteranceDashScope streams one second of speech (60 ms frames,
// as a device sends them) to a stand-in DashScope recognizer and waits for
// the text: the allocations per utterance (client and stand-in server, in
// one process).
func BenchmarkUtteranceDashScope(b *testing.B) {
	url := wsServer(b, func(r *http.Request, c *websocket.Conn) {
		ctx := context.Background()
		_, _, _ = c.Read(ctx)
		_ = c.Write(ctx, websocket.MessageText, []byte(`{"header":{"task_id":"x","event":"task-started"},"payload":{}}`))
		for {
			typ, data, err := c.Read(ctx)
			if err != nil {
				return
			}
			if typ == websocket.MessageText && strings.Contains(string(data), "finish-task") {
				break
			}
		}
		_ = c.Write(ctx, websocket.MessageText, []byte(`{"header":{"task_id":"x","event":"result-generated"},"payload":{"output":{"sentence":{"text":"打开客厅的灯。","sentence_end":true}}}}`))
		_ = c.Write(ctx, websocket.MessageText, []byte(`{"header":{"task_id":"x","event":"task-finished"},"payload":{}}`))
		_, _, _ = c.Read(ctx)
	})
	d := &DashScope{URL: url, APIKey: "sk"}
	frame := make([]int16, 960)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		s, err := d.Start(ctx, "zh")
		if err != nil {
			b.Fatal(err)
		}
		for range 16 {
			if err := s.Write(frame); err != nil {
				b.Fatal(err)
			}
		}
		if text, err := s.Finish(ctx); err != nil || text != "打开客厅的灯。" {
			b.Fatal(text, err)
		}
		s.Close()
	}
}
