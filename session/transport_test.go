package session_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/protocol"
	"github.com/xiaozhi-hub/hub/registry"
	"github.com/xiaozhi-hub/hub/session"
	"github.com/xiaozhi-hub/hub/store"
)

// pipeConn is a transport that is not a WebSocket: messages travel over
// channels, and its hello negotiates a UDP audio channel, the way the MQTT
// adapter does.
type pipeConn struct {
	in     chan session.Message // device → hub
	out    chan []byte          // hub → device, text
	audio  chan session.AudioFrame
	closed chan struct{}
	once   sync.Once
	mu     sync.Mutex
	reason string
}

func newPipeConn() *pipeConn {
	return &pipeConn{in: make(chan session.Message, 16), out: make(chan []byte, 16),
		audio: make(chan session.AudioFrame, 16), closed: make(chan struct{})}
}

func (p *pipeConn) Read(ctx context.Context) (session.Message, error) {
	select {
	case m, ok := <-p.in:
		if !ok {
			return session.Message{}, &session.EndError{Reason: "mqtt session ended", Err: errors.New("eof")}
		}
		return m, nil
	case <-p.closed:
		return session.Message{}, errors.New("closed")
	case <-ctx.Done():
		return session.Message{}, ctx.Err()
	}
}

func (p *pipeConn) Negotiate(_ string, h protocol.ClientHello) (session.Negotiated, error) {
	if h.Transport != "udp" {
		return session.Negotiated{}, errors.New("this transport carries audio over UDP only")
	}
	return session.Negotiated{Transport: "udp", ProtocolVersion: 3,
		UDP: &protocol.UDPParams{Server: "192.0.2.1", Port: 8884, Key: "00112233445566778899aabbccddeeff", Nonce: "01000000000000000000000000000000"}}, nil
}

func (p *pipeConn) WriteText(ctx context.Context, data []byte) error {
	select {
	case p.out <- append([]byte(nil), data...):
		return nil
	case <-p.closed:
		return errors.New("closed")
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (p *pipeConn) WriteAudio(ctx context.Context, f session.AudioFrame) error {
	select {
	case p.audio <- f:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (p *pipeConn) Close(code session.CloseCode, reason string) {
	p.mu.Lock()
	p.reason = reason
	p.mu.Unlock()
	p.CloseNow()
}

func (p *pipeConn) CloseNow() { p.once.Do(func() { close(p.closed) }) }

// The device session runs over any Connection: over a transport that is not
// a WebSocket, the hello is answered with the transport's UDP channel, the
// hub discovers the device's MCP tools, audio frames reach the session (and
// are dropped for now), and the transport's end takes the device offline
// with the transport's reason.
func TestSessionOverAnotherTransport(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "hub.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	reg := registry.New(st, registry.Options{})
	defer reg.Close()
	if err := reg.Load(ctx); err != nil {
		t.Fatal(err)
	}
	srv := session.New(session.Options{Registry: reg})
	defer srv.Close()
	offline, stop := reg.Subscribe(hub.EventOffline)
	defer stop()

	const id = "aa:00:00:00:00:42"
	c := newPipeConn()
	c.in <- session.Message{Kind: session.AudioMessage, Audio: session.AudioFrame{Data: []byte{1, 2, 3}}, Size: 7} // before the hello: ignored
	c.in <- session.Message{Kind: session.TextMessage, Text: []byte(`{"type":"hello","version":3,"transport":"udp","features":{"mcp":true}}`)}
	served := make(chan bool, 1)
	go func() { served <- srv.Serve(c, protocol.Identity{DeviceID: id, ClientID: "c1"}, "mqtt 192.0.2.7") }()

	next := func() map[string]any {
		t.Helper()
		select {
		case b := <-c.out:
			var m map[string]any
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatalf("hub sent %q: %v", b, err)
			}
			return m
		case <-time.After(10 * time.Second):
			t.Fatal("the hub sent nothing")
			return nil
		}
	}
	hello := next()
	udp, _ := hello["udp"].(map[string]any)
	if hello["type"] != "hello" || hello["transport"] != "udp" || udp["port"] != float64(8884) || udp["key"] == nil {
		t.Fatalf("server hello %v: want transport udp and the transport's udp object", hello)
	}
	if !<-served {
		t.Fatal("Serve refused the connection")
	}
	answer := func(result string) {
		req := next()
		payload, _ := req["payload"].(map[string]any)
		for payload["id"] == nil { // notifications/initialized
			req = next()
			payload, _ = req["payload"].(map[string]any)
		}
		if req["type"] != "mcp" || req["session_id"] != hello["session_id"] {
			t.Fatalf("hub sent %v: want an mcp message in the session", req)
		}
		idJSON, _ := json.Marshal(payload["id"])
		c.in <- session.Message{Kind: session.TextMessage, Text: []byte(`{"type":"mcp","payload":{"jsonrpc":"2.0","id":` + string(idJSON) + `,"result":` + result + `}}`)}
	}
	answer(`{"protocolVersion":"2024-11-05","capabilities":{"tools":{}},"serverInfo":{"name":"board","version":"2.4.2"}}`)
	c.in <- session.Message{Kind: session.AudioMessage, Audio: session.AudioFrame{Data: []byte{1, 2, 3}, Timestamp: 60}, Size: 7}
	answer(`{"tools":[{"name":"self.get_device_status","description":"status","inputSchema":{"type":"object","properties":{}}}]}`)

	deadline := time.Now().Add(10 * time.Second)
	for {
		tools, stale, _ := reg.Tools(id)
		if len(tools) == 1 && !stale {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("tools %v (stale %v): want the device's one tool", tools, stale)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if d, _ := reg.Device(id); !d.Online || d.Board != "board" {
		t.Fatalf("device %+v: want online, board from initialize", d)
	}

	close(c.in) // the transport ends the session
	select {
	case ev := <-offline:
		b, _ := json.Marshal(ev.Data)
		if ev.DeviceID != id || string(b) != `{"reason":"mqtt session ended"}` {
			t.Fatalf("offline event %s %s: want the transport's reason", ev.DeviceID, b)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("device not taken offline when its transport ended")
	}
}

// slowThings is a store whose IoT writes wait until released (a slow disk).
type slowThings struct {
	*store.Store
	release chan struct{}
}

func (s slowThings) SaveThing(ctx context.Context, id string, t hub.Thing) error {
	<-s.release
	return s.Store.SaveThing(ctx, id, t)
}

// IoT messages are stored off the device's read loop: while the store is
// slow to commit a descriptor, what the device says next is still heard,
// and the descriptor is stored once the store catches up.
func TestIoTStorageDoesNotHoldTheReadLoop(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "hub.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	release := make(chan struct{})
	reg := registry.New(slowThings{st, release}, registry.Options{})
	defer reg.Close()
	if err := reg.Load(ctx); err != nil {
		t.Fatal(err)
	}
	srv := session.New(session.Options{Registry: reg})
	defer srv.Close()
	rel := sync.OnceFunc(func() { close(release) })
	defer rel() // before srv.Close, which waits for the IoT goroutine
	heard, stop := reg.Subscribe(hub.EventDeviceMessage)
	defer stop()

	const id = "aa:00:00:00:00:43"
	c := newPipeConn()
	c.in <- session.Message{Kind: session.TextMessage, Text: []byte(`{"type":"hello","version":1,"transport":"udp"}`)}
	if !srv.Serve(c, protocol.Identity{DeviceID: id}, "test") {
		t.Fatal("Serve refused the connection")
	}
	<-c.out // the server hello
	c.in <- session.Message{Kind: session.TextMessage, Text: []byte(`{"type":"iot","update":true,"descriptors":[{"name":"Lamp","description":"a lamp","properties":{"power":{"description":"on","type":"boolean"}},"methods":{}}]}`)}
	c.in <- session.Message{Kind: session.TextMessage, Text: []byte(`{"type":"listen","state":"detect","text":"hi"}`)}
	select {
	case ev := <-heard:
		if ev.DeviceID != id {
			t.Fatalf("event of %s", ev.DeviceID)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the message after an IoT descriptor was not handled while the store was busy: the read loop waits for the store")
	}
	rel()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if things, _ := reg.Things(id); len(things) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the descriptor was not stored")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
