package asr

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/coder/websocket"
	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/voice/driver"
)

// FunASR is a local FunASR WebSocket server (funasr-runtime's
// funasr_wss_server, e.g. ws://localhost:10095), in its offline mode: the
// utterance's PCM streams to the server as it is heard, and the text comes
// once it ends. Wire format: a JSON text frame {"mode":"offline",
// "wav_name","is_speaking":true,"audio_fs":16000,"wav_format":"pcm",…},
// binary 16 kHz s16le PCM, {"is_speaking":false}; the server answers
// {"mode":"offline","text":…,"is_final":…}
// (https://github.com/modelscope/FunASR/blob/main/runtime/docs/websocket_protocol.md).
type FunASR struct {
	URL     string        // ws://host:port
	Timeout time.Duration // for connecting and for the final text (default 30 s)
	Client  *http.Client  // makes the handshake (nil: the default client)
}

// Start connects and announces an utterance.
func (f *FunASR) Start(ctx context.Context, language string) (driver.Recognition, error) {
	timeout := f.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	dctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	up := &funASRConn{where: "FunASR at " + f.URL}
	c, _, err := websocket.Dial(dctx, f.URL, &websocket.DialOptions{Subprotocols: []string{"binary"}, HTTPClient: f.Client})
	if err != nil {
		return nil, up.fail(err)
	}
	c.SetReadLimit(1 << 20)
	up.c = c
	first, _ := json.Marshal(map[string]any{"mode": "offline", "chunk_size": []int{5, 10, 5}, "chunk_interval": 10,
		"wav_name": "xiaozhi", "is_speaking": true, "itn": true, "audio_fs": rate, "wav_format": "pcm"})
	if err := c.Write(dctx, websocket.MessageText, first); err != nil {
		c.CloseNow()
		return nil, up.fail(err)
	}
	return &stream{up: up, timeout: timeout}, nil
}

// funASRConn is one utterance's connection to a FunASR server.
type funASRConn struct {
	c     *websocket.Conn
	where string
}

func (f *funASRConn) writeAudio(ctx context.Context, pcm []byte) error {
	if err := f.c.Write(ctx, websocket.MessageBinary, pcm); err != nil {
		return f.fail(err)
	}
	return nil
}

func (f *funASRConn) finish(ctx context.Context) (string, error) {
	if err := f.c.Write(ctx, websocket.MessageText, []byte(`{"is_speaking":false}`)); err != nil {
		return "", f.fail(err)
	}
	for {
		typ, data, err := f.c.Read(ctx)
		if err != nil {
			return "", f.fail(err)
		}
		if typ != websocket.MessageText {
			continue
		}
		var m struct {
			Mode    string `json:"mode"`
			Text    string `json:"text"`
			IsFinal *bool  `json:"is_final"`
		}
		if json.Unmarshal(data, &m) != nil {
			return "", hub.Errorf(hub.EUNAVAILABLE, "speech recognition (%s) sent something that is not its JSON: %s", f.where, hub.Truncate(data, 120))
		}
		// Offline mode answers once; 2pass servers end with an offline result.
		if m.Mode == "offline" || m.Mode == "2pass-offline" || m.IsFinal != nil && *m.IsFinal {
			return m.Text, nil
		}
	}
}

func (f *funASRConn) close() { _ = f.c.CloseNow() }

func (f *funASRConn) fail(err error) error {
	return hub.Errorf(hub.EUNAVAILABLE, "speech recognition (%s): %v", f.where, err)
}
