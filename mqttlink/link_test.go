package mqttlink

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/xiaozhi-hub/hub/protocol"
	"github.com/xiaozhi-hub/hub/session"
	"github.com/xiaozhi-hub/hub/sim/mqttdevice"
	"github.com/xiaozhi-hub/hub/udpaudio"
)

// bus records what the link publishes and whom it disconnects.
type bus struct {
	mu        sync.Mutex
	published [][]byte
	kicked    []string
}

func (b *bus) Publish(id string, p []byte) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.published = append(b.published, p)
	return nil
}

func (b *bus) Disconnect(id string) { b.mu.Lock(); b.kicked = append(b.kicked, id); b.mu.Unlock() }

func (b *bus) last() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.published) == 0 {
		return nil
	}
	return b.published[len(b.published)-1]
}

// served is a connection the link served, with what reached its session.
type served struct {
	session.Idle
	msgs  chan session.Message
	ended chan string
}

func (s *served) Receive(m session.Message) {
	m.Audio.Data = bytes.Clone(m.Audio.Data) // it may alias the transport's buffer
	s.msgs <- m
}

func (s *served) End(reason string) {
	select {
	case s.ended <- reason:
	default:
	}
}

// next is the next message the session received, or an EndError once the
// session ended.
func (s *served) next(ctx context.Context) (session.Message, error) {
	select {
	case m := <-s.msgs:
		return m, nil
	case r := <-s.ended:
		return session.Message{}, &session.EndError{Reason: r, Err: errors.New("ended")}
	case <-ctx.Done():
		return session.Message{}, ctx.Err()
	}
}

// sessions hands the test each connection the link serves.
type sessions chan *served

func (s sessions) ServeIdle(c session.Idle, _ protocol.Identity, _ string) session.Inbox {
	sv := &served{Idle: c, msgs: make(chan session.Message, 64), ended: make(chan string, 1)}
	s <- sv
	return sv
}

func setup(t *testing.T, idle time.Duration) (*Link, *bus, sessions, *udpaudio.Server) {
	t.Helper()
	audio, err := udpaudio.Listen("127.0.0.1:0", udpaudio.Config{IdleTimeout: idle})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = audio.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	b := &bus{}
	ss := make(sessions, 4)
	l, err := New(Options{Bus: b, Sessions: ss, Audio: audio, UDPPort: int(audio.Addr().Port())})
	if err != nil {
		t.Fatal(err)
	}
	return l, b, ss, audio
}

// The audio channel is correct both ways: frames the device sends over UDP
// reach the session, and frames written back reach the device and pass the
// firmware's downlink rules (an echo). Text messages arrive in order.
func TestEchoOverTheUDPChannel(t *testing.T) {
	l, _, ss, _ := setup(t, time.Minute)
	l.Connected(protocol.Identity{DeviceID: "aa:00:00:00:00:01"}, "remote", "127.0.0.1:1883")
	c := <-ss
	l.Message("aa:00:00:00:00:01", []byte(`{"type":"listen"}`))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m, err := c.next(ctx)
	if err != nil || m.Kind != session.TextMessage || string(m.Text) != `{"type":"listen"}` {
		t.Fatalf("Read = %+v %v", m, err)
	}
	neg, err := c.Negotiate("sid-1", protocol.ClientHello{Version: 3, Transport: "udp"})
	if err != nil || neg.UDP == nil || neg.UDP.Server != "127.0.0.1" {
		t.Fatalf("Negotiate = %+v %v", neg, err)
	}
	udp, _ := json.Marshal(neg.UDP)
	dev, err := mqttdevice.OpenChannel(udp)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close(false)
	for i := range 3 {
		frame := []byte{0xf8, byte(i), 0xfe}
		if err := dev.SendAudio(frame, uint32(60*i)); err != nil {
			t.Fatal(err)
		}
		m, err := c.next(ctx)
		if err != nil || m.Kind != session.AudioMessage || !bytes.Equal(m.Audio.Data, frame) {
			t.Fatalf("uplink frame %d: %+v %v", i, m, err)
		}
		if err := c.WriteAudio(ctx, m.Audio); err != nil {
			t.Fatal(err)
		}
		back, err := dev.Recv(ctx)
		if err != nil || !bytes.Equal(back.Opus, frame) || back.Sequence != uint32(i+1) {
			t.Fatalf("echo %d: %+v %v", i, back, err)
		}
	}
}

// A conversation whose UDP channel falls silent is ended with the
// server's goodbye carrying the exact session id; the MQTT session stays.
// Without a conversation, audio cannot be written.
func TestSilentChannelEndsWithGoodbye(t *testing.T) {
	l, b, ss, _ := setup(t, 200*time.Millisecond)
	l.Connected(protocol.Identity{DeviceID: "aa:00:00:00:00:02"}, "remote", "127.0.0.1:1883")
	c := <-ss
	if err := c.WriteAudio(context.Background(), session.AudioFrame{Data: []byte{1}}); err == nil {
		t.Fatal("audio written with no conversation open")
	}
	if _, err := c.Negotiate("sid-2", protocol.ClientHello{Version: 3, Transport: "udp"}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	deadline := time.Now().Add(10 * time.Second)
	for string(b.last()) != `{"type":"goodbye","session_id":"sid-2"}` {
		if time.Now().After(deadline) {
			t.Fatalf("no goodbye; last published %q", b.last())
		}
		time.Sleep(20 * time.Millisecond)
	}
	l.Disconnected("aa:00:00:00:00:02", "keepalive expired")
	var end *session.EndError
	if _, err := c.next(ctx); !errors.As(err, &end) || end.Reason != "keepalive expired" {
		t.Fatalf("Read after the MQTT session ended: %v", err)
	}
}

// A hello the link cannot serve is refused with a reason, and a newer
// connection of the same device replaces the older one.
func TestBadHelloAndReplacement(t *testing.T) {
	l, b, ss, _ := setup(t, time.Minute)
	id := protocol.Identity{DeviceID: "aa:00:00:00:00:03"}
	l.Connected(id, "remote", "127.0.0.1:1883")
	old := <-ss
	if _, err := old.Negotiate("s", protocol.ClientHello{Version: 3, Transport: "websocket"}); err == nil {
		t.Fatal("a websocket hello over MQTT was negotiated")
	}
	l.Connected(id, "remote", "[::1]:1883")
	fresh := <-ss
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := old.next(ctx); err == nil {
		t.Fatal("the replaced connection still reads")
	}
	// Reached over IPv6 with no udp-public: the device cannot be told an address.
	if _, err := fresh.Negotiate("s", protocol.ClientHello{Version: 3, Transport: "udp"}); err == nil {
		t.Fatal("negotiated an IPv6 UDP address the firmware cannot use")
	}
	old.CloseNow() // replaced: must not disconnect the new connection
	fresh.CloseNow()
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.kicked) != 1 || l.Devices() != 0 {
		t.Fatalf("disconnected %v, devices %d", b.kicked, l.Devices())
	}
}

// Each hello is its own conversation: a goodbye the hub sends late for an
// earlier one (its voice ending after the device said hello again) names
// that conversation and leaves the open one alone.
func TestLateGoodbyeLeavesTheNextConversation(t *testing.T) {
	l, b, ss, _ := setup(t, time.Minute)
	l.Connected(protocol.Identity{DeviceID: "aa:00:00:00:00:04"}, "mqtt 127.0.0.1:50000", "127.0.0.1:1883")
	c := <-ss
	if _, err := c.Negotiate("sid-a", protocol.ClientHello{Version: 3, Transport: "udp"}); err != nil {
		t.Fatal(err)
	}
	neg, err := c.Negotiate("sid-b", protocol.ClientHello{Version: 3, Transport: "udp"})
	if err != nil {
		t.Fatal(err)
	}
	c.Goodbye("sid-a")
	if p := b.last(); p != nil {
		t.Fatalf("a goodbye for the earlier conversation was published: %s", p)
	}
	udp, _ := json.Marshal(neg.UDP)
	dev, err := mqttdevice.OpenChannel(udp)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close(false)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := dev.SendAudio([]byte{0xf8, 1}, 0); err != nil {
		t.Fatal(err)
	}
	if m, err := c.next(ctx); err != nil || m.Kind != session.AudioMessage {
		t.Fatalf("the open conversation's audio after a late goodbye: %+v %v", m, err)
	}
	c.Goodbye("sid-b")
	if p := string(b.last()); p != `{"type":"goodbye","session_id":"sid-b"}` {
		t.Fatalf("goodbye for the open conversation: %q", p)
	}
}

// The UDP sessions of devices whose MQTT connections come from one
// address share that address's quota: over it, the address's own oldest
// unused session makes room (its device is told goodbye), and another
// address's devices are not touched.
func TestUDPSessionsPerMQTTAddress(t *testing.T) {
	audio, err := udpaudio.Listen("127.0.0.1:0", udpaudio.Config{MaxSessionsPerAddr: 1})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = audio.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	b := &bus{}
	ss := make(sessions, 4)
	l, err := New(Options{Bus: b, Sessions: ss, Audio: audio, UDPPort: int(audio.Addr().Port())})
	if err != nil {
		t.Fatal(err)
	}
	hello := protocol.ClientHello{Version: 3, Transport: "udp"}
	l.Connected(protocol.Identity{DeviceID: "aa:00:00:00:00:05"}, "mqtt 192.0.2.9:1000", "127.0.0.1:1883")
	first := <-ss
	l.Connected(protocol.Identity{DeviceID: "aa:00:00:00:00:06"}, "mqtt 192.0.2.10:1000", "127.0.0.1:1883")
	elsewhere := <-ss
	l.Connected(protocol.Identity{DeviceID: "aa:00:00:00:00:07"}, "mqtt 192.0.2.9:1001", "127.0.0.1:1883")
	second := <-ss
	for i, c := range []*served{first, elsewhere, second} { // in this order
		if _, err := c.Negotiate(fmt.Sprintf("sid-%d", i+1), hello); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for string(b.last()) != `{"type":"goodbye","session_id":"sid-1"}` {
		if time.Now().After(deadline) {
			t.Fatalf("no goodbye for the reclaimed session; last published %q", b.last())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if n := audio.Sessions(); n != 2 {
		t.Fatalf("%d UDP sessions open, want 2 (one per address)", n)
	}
	l.Disconnected("aa:00:00:00:00:05", "test over")
}

// earlySessions is a Sessions whose device speaks before ServeIdle has
// returned (an external broker delivers on its own goroutine).
type earlySessions struct {
	l  **Link
	ss sessions
}

func (e earlySessions) ServeIdle(c session.Idle, id protocol.Identity, remote string) session.Inbox {
	(*e.l).Message(id.DeviceID, []byte(`{"n":1}`))
	(*e.l).Offer(id.DeviceID, []byte(`{"n":2}`))
	return e.ss.ServeIdle(c, id, remote)
}

// Messages that come before the device's session started wait for it and
// reach it in order, ahead of later ones.
func TestMessagesBeforeTheSessionKeepTheirOrder(t *testing.T) {
	var l *Link
	ss := make(sessions, 1)
	l, err := New(Options{Bus: &bus{}, Sessions: earlySessions{&l, ss}})
	if err != nil {
		t.Fatal(err)
	}
	const id = "aa:00:00:00:00:08"
	l.Connected(protocol.Identity{DeviceID: id}, "mqtt 192.0.2.1:1000", "127.0.0.1:1883")
	c := <-ss
	l.Message(id, []byte(`{"n":3}`))
	l.Offer(id, []byte(`{"n":4}`))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for want := 1; want <= 4; want++ {
		m, err := c.next(ctx)
		if err != nil || string(m.Text) != fmt.Sprintf(`{"n":%d}`, want) {
			t.Fatalf("message %d: %q %v", want, m.Text, err)
		}
	}
	l.Disconnected(id, "test over")
}

// During a conversation the session gets the device's UDP audio and MQTT
// messages in the order they reached the hub, even when it is behind: a
// listen stop the device sent after its last frame must not overtake the
// frames already received (the utterance would be cut, or empty).
func TestAudioAndMessagesKeepTheirOrder(t *testing.T) {
	l, _, ss, audio := setup(t, time.Minute)
	l.Connected(protocol.Identity{DeviceID: "aa:00:00:00:00:07"}, "remote", "127.0.0.1:1883")
	c := <-ss
	c.msgs = make(chan session.Message) // the session takes one message at a time: it is behind
	neg, err := c.Negotiate("sid-1", protocol.ClientHello{Version: 3, Transport: "udp"})
	if err != nil {
		t.Fatal(err)
	}
	udp, _ := json.Marshal(neg.UDP)
	dev, err := mqttdevice.OpenChannel(udp)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close(false)
	const frames = 12
	for i := range frames {
		if err := dev.SendAudio([]byte{0xf8, byte(i), 0xfe}, 0); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for audio.Stats().Accepted < frames {
		if time.Now().After(deadline) {
			t.Fatalf("the hub accepted %d of %d datagrams", audio.Stats().Accepted, frames)
		}
		time.Sleep(time.Millisecond)
	}
	l.Message("aa:00:00:00:00:07", []byte(`{"type":"listen","state":"stop"}`))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var order []string
	for len(order) < frames+1 {
		m, err := c.next(ctx)
		if err != nil {
			t.Fatalf("after %v: %v", order, err)
		}
		if m.Kind == session.AudioMessage {
			order = append(order, fmt.Sprintf("audio%d", m.Audio.Data[1]))
		} else {
			order = append(order, "stop")
		}
	}
	if order[frames] != "stop" {
		t.Fatalf("the session got %v: the listen stop overtook audio that came before it", order)
	}
}
