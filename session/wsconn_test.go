package session

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/coder/websocket"
	"github.com/xiaozhi-hub/hub/internal/pipenet"
)

// A device that stops reading (its buffers full, its Wi-Fi gone without a
// word) while an answer streams to it does not hold the answer's writer:
// a write with no deadline of its own ends within maxWrite, and the next
// one too, long after the first bound was made. Writes to a device that
// reads go on for as long as the answer does.
func TestWritesToADeviceThatStopsReadingEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		conns := make(chan *wsConn, 1)
		l := pipenet.Listen()
		hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			c, err := websocket.Accept(w, r, nil)
			if err != nil {
				t.Error(err)
				return
			}
			conns <- newWSConn(c, 1, nil) // the connection outlives the handler
		})}
		go hs.Serve(l)
		defer hs.Close()
		client := &http.Client{Transport: &http.Transport{DialContext: l.DialContext}}
		defer client.CloseIdleConnections()
		dev, _, err := websocket.Dial(ctx, "ws://hub/", &websocket.DialOptions{HTTPClient: client})
		if err != nil {
			t.Fatal(err)
		}
		defer dev.CloseNow()
		w := <-conns
		defer w.CloseNow()

		// The device reads for a minute of answers: 20 s past the first
		// bound's renewal point, so writes go on under a renewed one. Then
		// it stops reading, without closing anything (a cancelled read
		// would close the connection).
		const frames = 1000
		read := make(chan error)
		go func() {
			for range frames {
				if _, _, err := dev.Read(ctx); err != nil {
					read <- err
					return
				}
			}
			read <- nil
		}()
		frame := make([]byte, 240)
		for range frames { // 60 ms apart, as an answer's frames
			if err := w.WriteAudio(ctx, AudioFrame{Data: frame}); err != nil {
				t.Fatalf("a write to a device that reads: %v", err)
			}
			time.Sleep(60 * time.Millisecond)
		}
		if err := <-read; err != nil {
			t.Fatalf("the device's reads: %v", err)
		}
		// The answer ends with a text message (tts stop): the connection
		// then holds no context for writes (an idle device's memory).
		go dev.Read(ctx)
		if err := w.WriteText(ctx, []byte(`{"type":"tts","state":"stop"}`)); err != nil {
			t.Fatal(err)
		}
		if w.bound != nil {
			t.Fatal("the audio's write context is held after the answer ended")
		}

		start := time.Now()
		err = w.WriteAudio(ctx, AudioFrame{Data: frame}) // nobody reads: it blocks, then ends
		if err == nil {
			t.Fatal("a write nobody reads returned no error")
		}
		if waited := time.Since(start); waited > maxWrite {
			t.Fatalf("the write ended after %v, more than maxWrite (%v)", waited, maxWrite)
		}
		if err := w.WriteAudio(ctx, AudioFrame{Data: frame}); err == nil || errors.Is(err, context.Canceled) {
			t.Fatalf("a write after the connection was closed: %v", err)
		}
	})
}
