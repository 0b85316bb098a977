package session_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"runtime/pprof"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/coder/websocket"
	"github.com/xiaozhi-hub/hub/opus"
	"github.com/xiaozhi-hub/hub/protocol"
	"github.com/xiaozhi-hub/hub/session"
	"github.com/xiaozhi-hub/hub/vad"
	"github.com/xiaozhi-hub/hub/voice"
)

// engineConversations serves the sessions' conversations with a voice
// engine, as the hub does (server/voice.go).
type engineConversations struct{ e *voice.Engine }

func (v engineConversations) Open(id, lang string, down protocol.AudioParams, aec bool, out session.ConversationOutput) session.Conversation {
	if aec {
		return v.e.Open(id, lang, down, out, voice.EchoUncancelled())
	}
	return v.e.Open(id, lang, down, out)
}

type opusCodec struct{}

func (opusCodec) NewDecoder(rate int) (voice.Decoder, error)     { return opus.NewDecoder(rate) }
func (opusCodec) NewEncoder(rate, ms int) (voice.Encoder, error) { return opus.NewEncoder(rate, ms) }

// Providers that are never reached: nobody speaks.
type unusedRecognizer struct{}

func (unusedRecognizer) Start(context.Context, string) (voice.Recognition, error) {
	panic("recognition started with nobody speaking")
}

type unusedSynthesizer struct{}

func (unusedSynthesizer) Synthesize(context.Context, string, string) (voice.Speech, error) {
	panic("synthesis with nobody speaking")
}

type unusedBrain struct{}

func (unusedBrain) Ready() error { return nil }
func (unusedBrain) Answer(context.Context, voice.Turn, func(string)) (string, error) {
	panic("an answer with nobody speaking")
}

// bubbleGoroutines counts the goroutines of the calling goroutine's
// synctest bubble.
func bubbleGoroutines(t *testing.T) int {
	t.Helper()
	var b bytes.Buffer
	if err := pprof.Lookup("goroutine").WriteTo(&b, 2); err != nil {
		t.Fatal(err)
	}
	// The dump starts with the calling goroutine: "goroutine N [running, synctest bubble B]:".
	sc := bufio.NewScanner(&b)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	bubble, n := "", 0
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "goroutine ") {
			continue
		}
		i := strings.Index(line, "synctest bubble ")
		if i < 0 {
			continue
		}
		b := strings.TrimSuffix(line[i:], "]:")
		if bubble == "" {
			bubble = b
		}
		if b == bubble {
			n++
		}
	}
	if bubble == "" {
		t.Fatal("not in a synctest bubble")
	}
	return n
}

// WebSocket devices that send listen start (auto mode) right after their
// hello, as firmware on WebSocket does, and then nothing, or the room's
// silence, as a listening device does, cost the hub no goroutine beyond
// their connection's: a conversation waiting for speech holds none of its
// own. Counted exactly, in a synctest bubble over in-memory connections.
func TestListeningDevicesHoldNoConversationGoroutine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		e := voice.New(voice.Options{Codec: opusCodec{}, Recognizer: unusedRecognizer{}, Synthesizer: unusedSynthesizer{}, Brain: unusedBrain{},
			NewVAD: func() voice.VAD { return vad.NewEnergy(vad.Config{}) }})
		t.Cleanup(e.Close) // after the sessions
		_, client := bubbleHub(t, session.Options{Voice: engineConversations{e}})

		enc, err := opus.NewEncoder(16000, 60)
		if err != nil {
			t.Fatal(err)
		}
		room, err := enc.Encode(make([]int16, 960)) // 60 ms of a quiet room
		if err != nil {
			t.Fatal(err)
		}
		send := func(c *websocket.Conn, msg string) {
			if err := c.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
				t.Fatal(err)
			}
		}
		const devices = 50
		var conns []*websocket.Conn
		for i := range devices {
			c, _, err := websocket.Dial(ctx, "ws://hub/xiaozhi/v1/", &websocket.DialOptions{
				HTTPClient: client, HTTPHeader: http.Header{"Device-Id": {fmt.Sprintf("aa:00:00:00:00:%02x", i)}},
			})
			if err != nil {
				t.Fatal(err)
			}
			defer c.CloseNow()
			send(c, `{"type":"hello","version":1,"transport":"websocket","audio_params":{"format":"opus","sample_rate":16000,"channels":1,"frame_duration":60}}`)
			if _, _, err := c.Read(ctx); err != nil {
				t.Fatal(err)
			}
			send(c, `{"type":"device_note"}`) // a device message recorded, as listen start is
			conns = append(conns, c)
		}
		synctest.Wait()
		connected := bubbleGoroutines(t)

		for i, c := range conns {
			send(c, `{"session_id":"x","type":"listen","state":"start","mode":"auto"}`)
			if i%2 == 0 {
				for range 20 {
					if err := c.Write(ctx, websocket.MessageBinary, room); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
		synctest.Wait()
		if n := e.Active(); n != devices {
			t.Fatalf("%d conversations open, want %d", n, devices)
		}
		if n := bubbleGoroutines(t); n != connected {
			t.Fatalf("%d devices listening: %d goroutines, %d before they listened (%+.2f per device)",
				devices, n, connected, float64(n-connected)/devices)
		}
	})
}
