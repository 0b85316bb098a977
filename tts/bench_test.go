package tts

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/coder/websocket"
	"github.com/xiaozhi-hub/hub/voice/driver"
)

// BenchmarkSentence synthesises one second of 24 kHz speech from an
// OpenAI-compatible server that sends it in pieces of odd sizes, and reads
// it all: the allocations per sentence (client and stand-in server, in
// one process).
func BenchmarkSentence(b *testing.B) {
	pcm := make([]byte, 2*24000)
	for i := range 24000 {
		binary.LittleEndian.PutUint16(pcm[2*i:], uint16(int16(i)))
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "audio/pcm")
		for i := 0; i < len(pcm); i += 777 {
			w.Write(pcm[i:min(i+777, len(pcm))])
		}
	}))
	defer srv.Close()
	o := &OpenAI{BaseURL: srv.URL + "/v1", APIKey: "sk"}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		s, err := o.Synthesize(ctx, "你好。", "")
		if err != nil {
			b.Fatal(err)
		}
		drain(b, s)
	}
}

// BenchmarkSentenceDashScope is the same over DashScope's task protocol
// (a stand-in server: task-started, then the audio in pieces of odd sizes,
// then task-finished).
func BenchmarkSentenceDashScope(b *testing.B) {
	pcm := make([]byte, 2*24000)
	url := dsServer(b, func(r *http.Request, c *websocket.Conn) {
		ctx := context.Background()
		for i := range 3 {
			if _, _, err := c.Read(ctx); err != nil {
				return
			}
			if i == 0 {
				_ = c.Write(ctx, websocket.MessageText, []byte(`{"header":{"task_id":"x","event":"task-started"},"payload":{}}`))
			}
		}
		for i := 0; i < len(pcm); i += 4801 {
			_ = c.Write(ctx, websocket.MessageBinary, pcm[i:min(i+4801, len(pcm))])
		}
		_ = c.Write(ctx, websocket.MessageText, []byte(`{"header":{"task_id":"x","event":"task-finished"},"payload":{}}`))
		_, _, _ = c.Read(ctx)
	})
	d := &DashScope{URL: url, APIKey: "sk"}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		s, err := d.Synthesize(ctx, "你好。", "")
		if err != nil {
			b.Fatal(err)
		}
		drain(b, s)
	}
}

// drain reads a sentence of one second at 24 kHz to its end.
func drain(b *testing.B, s driver.Speech) {
	n := 0
	for {
		p, err := s.Read(context.Background())
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			b.Fatal(err)
		}
		n += len(p)
	}
	s.Close()
	if n != 24000 {
		b.Fatalf("%d samples", n)
	}
}
