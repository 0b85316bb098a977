package mqttlink_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/mqttlink"
	"github.com/xiaozhi-hub/hub/protocol"
	"github.com/xiaozhi-hub/hub/registry"
	"github.com/xiaozhi-hub/hub/registry/registrytest"
	"github.com/xiaozhi-hub/hub/session"
	"github.com/xiaozhi-hub/hub/sim/mqttdevice"
	"github.com/xiaozhi-hub/hub/udpaudio"
)

// These tests run the link with the real device session behind it, a fake
// bus in place of the broker, and the real UDP audio server on 127.0.0.1:
// what a device on MQTT+UDP and the people using the hub would notice.

// fakeBus records what the link publishes, and whom it disconnects.
type fakeBus struct {
	published chan string
	mu        sync.Mutex
	kicked    []string
}

func (b *fakeBus) Publish(_ string, p []byte) error { b.published <- string(p); return nil }
func (b *fakeBus) Disconnect(id string)             { b.mu.Lock(); b.kicked = append(b.kicked, id); b.mu.Unlock() }

// talk is a hub made of a link, the session server and the UDP audio
// server, with conversations that record what reaches them.
type talk struct {
	t     *testing.T
	reg   *registry.Registry
	bus   *fakeBus
	link  *mqttlink.Link
	audio *udpaudio.Server
	conv  *conversations
}

func newTalk(t *testing.T) *talk {
	t.Helper()
	audio, err := udpaudio.Listen("127.0.0.1:0", udpaudio.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = audio.Run(ctx) }()
	h := &talk{t: t, reg: registrytest.NewRegistry(t), bus: &fakeBus{published: make(chan string, 64)}, audio: audio, conv: newConversations()}
	srv := session.New(session.Options{Registry: h.reg, Voice: h.conv})
	h.link, err = mqttlink.New(mqttlink.Options{Bus: h.bus, Sessions: srv, Audio: audio, UDPPort: int(audio.Addr().Port())})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close(); cancel(); <-done; h.link.Wait() })
	return h
}

// published is the next message the hub published to a device, MCP
// discovery's requests aside (they go unanswered here).
func (h *talk) published() string {
	h.t.Helper()
	for {
		select {
		case p := <-h.bus.published:
			if strings.HasPrefix(p, `{"session_id":`) && strings.Contains(p, `"type":"mcp"`) {
				continue
			}
			return p
		case <-time.After(10 * time.Second):
			h.t.Fatal("the hub published nothing")
			return ""
		}
	}
}

// hello sends the device's hello and returns the conversation's session
// id and the device's end of its UDP channel.
func (h *talk) hello(id string) (string, *mqttdevice.Channel) {
	h.t.Helper()
	h.link.Message(id, []byte(`{"type":"hello","version":3,"transport":"udp","audio_params":{"format":"opus","sample_rate":16000,"channels":1,"frame_duration":60}}`))
	var sh struct {
		Type      string          `json:"type"`
		SessionID string          `json:"session_id"`
		UDP       json.RawMessage `json:"udp"`
	}
	if p := h.published(); json.Unmarshal([]byte(p), &sh) != nil || sh.Type != "hello" || sh.UDP == nil {
		h.t.Fatalf("the hub answered the hello with %s", p)
	}
	ch, err := mqttdevice.OpenChannel(sh.UDP)
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { ch.Close(false) })
	return sh.SessionID, ch
}

// heard waits until the conversation log has an entry containing s.
func (h *talk) heard(s string) {
	h.t.Helper()
	waitUntil(h.t, "the conversation to get "+s, func() bool { return strings.Contains(h.conv.all(), s) })
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func (h *talk) connect(id string) {
	h.link.Connected(protocol.Identity{DeviceID: id, ClientID: "c-" + id, ProtocolVersion: 3}, "mqtt 127.0.0.1:50000", "127.0.0.1:1883")
	waitUntil(h.t, "the device online", func() bool { d, err := h.reg.Device(id); return err == nil && d.Online })
}

// conversations records the conversations' calls, numbered by conversation.
type conversations struct {
	mu   sync.Mutex
	log  []string
	n    int
	outs []session.ConversationOutput
}

func newConversations() *conversations { return &conversations{} }

func (v *conversations) Open(_, _ string, _ protocol.AudioParams, _ bool, out session.ConversationOutput) session.Conversation {
	v.mu.Lock()
	v.n++
	n := v.n
	v.outs = append(v.outs, out)
	v.log = append(v.log, fmt.Sprintf("%d open", n))
	v.mu.Unlock()
	return conversation{v, n}
}

func (v *conversations) add(s string) { v.mu.Lock(); v.log = append(v.log, s); v.mu.Unlock() }
func (v *conversations) all() string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return strings.Join(v.log, " | ")
}

func (v *conversations) out(i int) session.ConversationOutput {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.outs[i]
}

type conversation struct {
	v *conversations
	n int
}

func (c conversation) Listen(state, _, _ string) { c.v.add(fmt.Sprintf("%d listen %s", c.n, state)) }
func (c conversation) Abort()                    { c.v.add(fmt.Sprintf("%d abort", c.n)) }
func (c conversation) Audio(opus []byte, _ uint32) {
	c.v.add(fmt.Sprintf("%d audio %x", c.n, opus))
}
func (c conversation) Close() { c.v.add(fmt.Sprintf("%d close", c.n)) }

func offlineReason(t *testing.T, events <-chan hub.Event, id string) string {
	t.Helper()
	for {
		select {
		case ev := <-events:
			if ev.DeviceID == id {
				b, _ := json.Marshal(ev.Data)
				return string(b)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the device did not go offline")
		}
	}
}

// A conversation over MQTT+UDP: the device's MQTT messages and its UDP
// audio reach the conversation in the order the device sent them; the
// conversation's messages are published to the device and its audio
// reaches the device's UDP channel.
func TestConversationOverMQTTAndUDP(t *testing.T) {
	h := newTalk(t)
	const id = "aa:00:00:00:0c:01"
	h.connect(id)
	_, ch := h.hello(id)
	h.link.Message(id, []byte(`{"type":"listen","state":"start","mode":"manual"}`))
	for i := range 3 {
		if err := ch.SendAudio([]byte{0xf8, byte(i)}, uint32(60*i)); err != nil {
			t.Fatal(err)
		}
	}
	waitUntil(t, "the datagrams at the hub", func() bool { return h.audio.Stats().Accepted >= 3 })
	h.link.Message(id, []byte(`{"type":"listen","state":"stop"}`))
	h.link.Message(id, []byte(`{"type":"abort"}`))
	h.heard("abort")
	if got, want := h.conv.all(), "1 open | 1 listen start | 1 audio f800 | 1 audio f801 | 1 audio f802 | 1 listen stop | 1 abort"; got != want {
		t.Fatalf("the conversation got\n%s\nwant\n%s", got, want)
	}
	out := h.conv.out(0)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := out.WriteText(ctx, []byte(`{"type":"tts","state":"start"}`)); err != nil {
		t.Fatal(err)
	}
	if p := h.published(); p != `{"type":"tts","state":"start"}` {
		t.Fatalf("published %s", p)
	}
	if err := out.WriteAudio(ctx, []byte{0xf8, 0xaa}, 0); err != nil {
		t.Fatal(err)
	}
	if f, err := ch.Recv(ctx); err != nil || string(f.Opus) != "\xf8\xaa" {
		t.Fatalf("the device received %+v %v", f, err)
	}
}

// The device's goodbye ends the conversation and closes its UDP channel;
// the device stays online on MQTT. A goodbye naming an earlier
// conversation leaves the open one alone.
func TestGoodbyeEndsTheConversation(t *testing.T) {
	h := newTalk(t)
	const id = "aa:00:00:00:0c:02"
	h.connect(id)
	first, _ := h.hello(id)
	second, ch := h.hello(id)
	h.link.Message(id, []byte(`{"type":"listen","state":"start"}`))
	h.link.Message(id, []byte(`{"session_id":"`+first+`","type":"goodbye"}`)) // late, for the first
	h.link.Message(id, []byte(`{"type":"abort"}`))
	h.heard("1 abort")
	if err := ch.SendAudio([]byte{0xf8, 1}, 0); err != nil {
		t.Fatal(err)
	}
	h.heard("audio f801")
	h.link.Message(id, []byte(`{"session_id":"`+second+`","type":"goodbye"}`))
	h.heard("1 close")
	waitUntil(t, "the UDP channel closed", func() bool { return h.audio.Sessions() == 0 })
	if d, _ := h.reg.Device(id); !d.Online {
		t.Fatal("the device's goodbye took it offline: only the conversation ends")
	}
	h.bus.mu.Lock()
	defer h.bus.mu.Unlock()
	if len(h.bus.kicked) != 0 {
		t.Fatalf("the device's goodbye disconnected %v", h.bus.kicked)
	}
}

// The hub ending a conversation (its voice has nothing more to say) tells
// the device goodbye with the conversation's exact session id and closes
// the UDP channel; the MQTT connection stays.
func TestHubEndsTheConversationWithGoodbye(t *testing.T) {
	h := newTalk(t)
	const id = "aa:00:00:00:0c:03"
	h.connect(id)
	sid, _ := h.hello(id)
	h.link.Message(id, []byte(`{"type":"listen","state":"start"}`))
	h.heard("1 listen start")
	h.conv.out(0).End("no speech for 30 s")
	if p := h.published(); p != `{"type":"goodbye","session_id":"`+sid+`"}` {
		t.Fatalf("published %s; want the goodbye of session %s", p, sid)
	}
	waitUntil(t, "the UDP channel closed", func() bool { return h.audio.Sessions() == 0 })
	if d, _ := h.reg.Device(id); !d.Online || !h.link.Holds(id) {
		t.Fatal("the end of a conversation ended the device's MQTT session")
	}
}

// A second hello opens a new conversation with its own session id and
// keys, and ends the first: its UDP channel closes, and the device's audio
// goes to the new one.
func TestSecondHelloOpensANewConversation(t *testing.T) {
	h := newTalk(t)
	const id = "aa:00:00:00:0c:04"
	h.connect(id)
	first, _ := h.hello(id)
	h.link.Message(id, []byte(`{"type":"listen","state":"start"}`))
	h.heard("1 listen start")
	second, ch := h.hello(id)
	if second == first || second == "" {
		t.Fatalf("the second hello was answered with session %q after %q: want a new one", second, first)
	}
	h.heard("1 close")
	waitUntil(t, "one UDP channel open", func() bool { return h.audio.Sessions() == 1 })
	if err := ch.SendAudio([]byte{0xf8, 2}, 0); err != nil {
		t.Fatal(err)
	}
	h.heard("2 audio f802")
	if got, want := h.conv.all(), "1 open | 1 listen start | 1 close | 2 open | 2 audio f802"; got != want {
		t.Fatalf("the conversations got\n%s\nwant\n%s", got, want)
	}
}

// The device's MQTT connection ending mid-conversation ends the
// conversation and its UDP channel, and takes the device offline with the
// broker's reason; the conversation's audio then goes nowhere.
func TestDisconnectWhileTalking(t *testing.T) {
	h := newTalk(t)
	offline, stop := h.reg.Subscribe(hub.EventOffline)
	defer stop()
	const id = "aa:00:00:00:0c:05"
	h.connect(id)
	_, ch := h.hello(id)
	h.link.Message(id, []byte(`{"type":"listen","state":"start"}`))
	if err := ch.SendAudio([]byte{0xf8, 3}, 0); err != nil {
		t.Fatal(err)
	}
	h.heard("1 audio f803")
	h.link.Disconnected(id, "keepalive expired")
	if r := offlineReason(t, offline, id); r != `{"reason":"keepalive expired"}` {
		t.Fatalf("offline event %s: want the broker's reason", r)
	}
	h.heard("1 close")
	waitUntil(t, "the UDP channel closed", func() bool { return h.audio.Sessions() == 0 })
	if err := h.conv.out(0).WriteAudio(context.Background(), []byte{0xf8}, 0); err == nil {
		t.Fatal("audio written to a device that is gone")
	}
	if h.link.Holds(id) {
		t.Fatal("the link still holds the device")
	}
}
