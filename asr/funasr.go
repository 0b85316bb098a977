package asr

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"time"

	"github.com/coder/websocket"
	"github.com/xiaozhi-hub/hub"
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
}

// Start connects and announces an utterance.
func (f *FunASR) Start(ctx context.Context, language string) (*Stream, error) {
	timeout := f.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	dctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c, _, err := websocket.Dial(dctx, f.URL, &websocket.DialOptions{Subprotocols: []string{"binary"}})
	if err != nil {
		return nil, hub.Errorf(hub.EUNAVAILABLE, "speech recognition (FunASR at %s): %v", f.URL, err)
	}
	c.SetReadLimit(1 << 20)
	first, _ := json.Marshal(map[string]any{"mode": "offline", "chunk_size": []int{5, 10, 5}, "chunk_interval": 10,
		"wav_name": "xiaozhi", "is_speaking": true, "itn": true, "audio_fs": rate, "wav_format": "pcm"})
	if err := c.Write(dctx, websocket.MessageText, first); err != nil {
		c.CloseNow()
		return nil, hub.Errorf(hub.EUNAVAILABLE, "speech recognition (FunASR at %s): %v", f.URL, err)
	}
	return &Stream{c: c, where: "FunASR at " + f.URL, timeout: timeout, finish: f.finish}, nil
}

func (f *FunASR) finish(ctx context.Context, s *Stream) (string, error) {
	if err := s.c.Write(ctx, websocket.MessageText, []byte(`{"is_speaking":false}`)); err != nil {
		return "", s.fail(err)
	}
	for {
		typ, data, err := s.c.Read(ctx)
		if err != nil {
			return "", s.fail(err)
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
			return "", hub.Errorf(hub.EUNAVAILABLE, "speech recognition (%s) sent something that is not its JSON: %s", s.where, hub.Truncate(data, 120))
		}
		// Offline mode answers once; 2pass servers end with an offline result.
		if m.Mode == "offline" || m.Mode == "2pass-offline" || m.IsFinal != nil && *m.IsFinal {
			return m.Text, nil
		}
	}
}

// Stream is an utterance streamed to a WebSocket recognizer.
type Stream struct {
	c       *websocket.Conn
	where   string
	timeout time.Duration
	finish  func(ctx context.Context, s *Stream) (string, error)
	buf     []byte
	err     error // the first write error: the stream is broken
}

// Write sends PCM (16 kHz mono) to the server.
func (s *Stream) Write(pcm []int16) error {
	if s.err != nil {
		return s.err
	}
	s.buf = s.buf[:0]
	for _, v := range pcm {
		s.buf = binary.LittleEndian.AppendUint16(s.buf, uint16(v))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.c.Write(ctx, websocket.MessageBinary, s.buf); err != nil {
		s.err = s.fail(err)
	}
	return s.err
}

// Finish ends the audio and returns the text.
func (s *Stream) Finish(ctx context.Context) (string, error) {
	if s.err != nil {
		return "", s.err
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	return s.finish(ctx, s)
}

// Close releases the connection.
func (s *Stream) Close() { _ = s.c.CloseNow() }

func (s *Stream) fail(err error) error {
	return hub.Errorf(hub.EUNAVAILABLE, "speech recognition (%s): %v", s.where, fmt.Sprint(err))
}
