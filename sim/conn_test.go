package sim_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"go.uber.org/goleak"

	"github.com/xiaozhi-hub/hub/protocol"
	"github.com/xiaozhi-hub/hub/sim"
)

func TestHelloExchangeAndHeaders(t *testing.T) {
	h := newFakeHub(t)
	d, hc := connect(t, h, sim.Config{Token: "tok", ProtocolVersion: 2})

	r := hc.req
	for k, want := range map[string]string{
		"Authorization":    "Bearer tok",
		"Client-Id":        d.Config().ClientID,
		"Device-Id":        "aa:bb:cc:00:00:01",
		"Protocol-Version": "2",
		"User-Agent":       "",
	} {
		if got := r.Header.Get(k); got != want {
			t.Errorf("header %s = %q, want %q", k, got, want)
		}
	}
	if r.Header.Get("Sec-WebSocket-Extensions") != "" {
		t.Errorf("device must not offer extensions, got %q", r.Header.Get("Sec-WebSocket-Extensions"))
	}
	wantHello := `{"type":"hello","version":2,"features":{"mcp":true},"transport":"websocket","audio_params":{"format":"opus","sample_rate":16000,"channels":1,"frame_duration":60}}`
	if string(hc.hello) != wantHello {
		t.Errorf("client hello\n got %s\nwant %s", hc.hello, wantHello)
	}
	if d.SessionID() != "sess-1" {
		t.Errorf("SessionID = %q", d.SessionID())
	}
	if !d.Connected() || d.Stats().Connects != 1 {
		t.Errorf("Connected = %v, stats %+v", d.Connected(), d.Stats())
	}
	if got := d.DownlinkAudio().SampleRate; got != 24000 {
		t.Errorf("downlink sample rate %d", got)
	}

	// session_id is echoed in later device messages (docs/protocol.md §3.3, §5.1).
	ctx := context.Background()
	if err := d.SendListenStart(ctx, "manual"); err != nil {
		t.Fatal(err)
	}
	if got, want := string(hc.next()), `{"session_id":"sess-1","type":"listen","state":"start","mode":"manual"}`; got != want {
		t.Errorf("listen start\n got %s\nwant %s", got, want)
	}
	_ = d.SendListenStop(ctx)
	_ = d.SendListenDetect(ctx, "你好小智")
	_ = d.SendAbort(ctx, "")
	_ = d.SendAbort(ctx, "wake_word_detected")
	for _, want := range []string{
		`{"session_id":"sess-1","type":"listen","state":"stop"}`,
		`{"session_id":"sess-1","type":"listen","state":"detect","text":"你好小智"}`,
		`{"session_id":"sess-1","type":"abort"}`,
		`{"session_id":"sess-1","type":"abort","reason":"wake_word_detected"}`,
	} {
		if got := string(hc.next()); got != want {
			t.Errorf("got %s\nwant %s", got, want)
		}
	}
}

func TestIdentityInQueryAndNoToken(t *testing.T) {
	h := newFakeHub(t)
	d, hc := connect(t, h, sim.Config{IdentityInQuery: true, ProtocolVersion: 3, Mode: sim.ModeIoT})
	q := hc.req.URL.Query()
	if q.Get("device-id") != d.ID() || q.Get("client-id") != d.Config().ClientID || q.Get("protocol-version") != "3" {
		t.Errorf("query %v", q)
	}
	if q.Has("authorization") || hc.req.Header.Get("Authorization") != "" || hc.req.Header.Get("Device-Id") != "" {
		t.Errorf("identity must only be in the query, without authorization: %v %v", q, hc.req.Header)
	}
	if !strings.Contains(string(hc.hello), `"features":{}`) || strings.Contains(string(hc.hello), "mcp") {
		t.Errorf("IoT hello must not announce mcp: %s", hc.hello)
	}
}

func TestBadServerHello(t *testing.T) {
	for _, tc := range []struct {
		name, hello, want string
	}{
		{"missing transport", `{"type":"hello","session_id":"x"}`, `"transport" is missing`},
		{"transport not a string", `{"type":"hello","transport":1}`, `"transport" is 1, not a string`},
		{"wrong transport", `{"type":"hello","transport":"udp"}`, `"transport" is "udp", want "websocket"`},
		{"no hello", "", "no server hello within 200ms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newFakeHub(t)
			if tc.hello == "" {
				h.setHello(nil)
			} else {
				h.setHello([]byte(tc.hello))
			}
			d := sim.New(sim.Config{URL: h.URL, HelloTimeout: 200 * time.Millisecond})
			err := d.Connect(context.Background())
			if !errors.Is(err, sim.ErrHello) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Connect error = %v, want ErrHello with %q", err, tc.want)
			}
			h.accept(t).gone(wait) // the device dropped the socket
			if d.Connected() {
				t.Error("still connected")
			}
		})
	}
}

func TestDropLeavesNoGoroutines(t *testing.T) {
	h := newFakeHub(t)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	d := sim.New(sim.Config{URL: h.URL})
	if err := d.Connect(context.Background()); err != nil {
		t.Fatal(err)
	}
	hc := h.accept(t)
	hc.rpc("tools/list", "") // exercise the main loop
	d.Drop()
	d.Wait()
	hc.gone(wait)
	// The hub sees an abnormal closure: no Close frame was sent (§3.5).
	if st := websocket.CloseStatus(hc.closeEr); st != -1 {
		t.Errorf("hub got close status %d, want none (TCP drop)", st)
	}
	select {
	case <-d.Done():
	default:
		t.Error("Done not closed after Drop")
	}
}

func TestRunReconnects(t *testing.T) {
	h := newFakeHub(t)
	d := sim.New(sim.Config{URL: h.URL, ReconnectMin: 10 * time.Millisecond, ReconnectMax: 20 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = d.Run(ctx); close(done) }()
	first := h.accept(t)
	_ = first.c.CloseNow() // the hub goes away
	second := h.accept(t)
	second.rpc("initialize", "")
	if d.Stats().Connects != 2 {
		t.Errorf("connects = %d", d.Stats().Connects)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(wait):
		t.Fatal("Run did not return after cancel")
	}
	second.gone(wait)
}

func TestAudioFramingAndTTS(t *testing.T) {
	for _, v := range []int{1, 2, 3} {
		h := newFakeHub(t)
		d, hc := connect(t, h, sim.Config{ProtocolVersion: v})
		if err := d.SendAudio(context.Background(), 0, []byte{1, 2, 3}); err != nil {
			t.Fatal(err)
		}
		select {
		case b := <-hc.bin:
			f, err := protocol.ParseAudioFrame(v, b)
			if err != nil || string(f.Payload) != "\x01\x02\x03" || (v == 2 && len(b) != 19) || (v == 3 && len(b) != 7) {
				t.Errorf("v%d frame % x: %+v %v", v, b, f, err)
			}
		case <-time.After(wait):
			t.Fatal("no audio frame")
		}
	}

	h := newFakeHub(t)
	d, hc := connect(t, h, sim.Config{})
	downlink := func() { _ = hc.c.Write(context.Background(), websocket.MessageBinary, sim.SilentOpus) }
	downlink() // dropped: not speaking (§5.3)
	hc.send(`{"type":"tts","state":"start"}`)
	hc.send(`{"type":"tts","state":"sentence_start","text":"hi"}`)
	waitFor(t, func() bool { return d.State() == sim.StateSpeaking })
	downlink()
	hc.send(`{"type":"tts","state":"stop"}`)
	// After tts stop the device listens again and says so (§6).
	if got := string(hc.next()); got != `{"session_id":"sess-1","type":"listen","state":"start","mode":"auto"}` {
		t.Errorf("after tts stop got %s", got)
	}
	if st := d.Stats(); st.AudioIn != 1 || st.AudioDropped != 1 || d.State() != sim.StateListening {
		t.Errorf("stats %+v state %s", st, d.State())
	}
}

// Push-to-talk (§6): after tts stop the device is idle and says nothing
// until the button is pressed again; it hears every audio frame.
func TestPushToTalkEndsIdle(t *testing.T) {
	h := newFakeHub(t)
	var heard atomic.Int32
	d, hc := connect(t, h, sim.Config{OnAudio: func([]byte) { heard.Add(1) }})
	ctx := context.Background()
	manual := `{"session_id":"sess-1","type":"listen","state":"start","mode":"manual"}`
	if err := d.SendListenStart(ctx, "manual"); err != nil {
		t.Fatal(err)
	}
	if got := string(hc.next()); got != manual {
		t.Fatalf("got %s", got)
	}
	if err := d.SendListenStop(ctx); err != nil {
		t.Fatal(err)
	}
	hc.next() // listen stop
	hc.send(`{"type":"tts","state":"start"}`)
	waitFor(t, func() bool { return d.State() == sim.StateSpeaking })
	_ = hc.c.Write(ctx, websocket.MessageBinary, sim.SilentOpus)
	hc.send(`{"type":"tts","state":"stop"}`)
	waitFor(t, func() bool { return d.State() == sim.StateIdle && heard.Load() == 1 })
	// The next message is the next press, not an auto-mode listen start.
	if err := d.SendListenStart(ctx, "manual"); err != nil {
		t.Fatal(err)
	}
	if got := string(hc.next()); got != manual {
		t.Errorf("after tts stop got %s, want the next press", got)
	}
}

func TestSystemRebootDrops(t *testing.T) {
	h := newFakeHub(t)
	_, hc := connect(t, h, sim.Config{})
	start := time.Now()
	hc.send(`{"type":"system","command":"reboot"}`)
	hc.gone(wait)
	if el := time.Since(start); el < 800*time.Millisecond {
		t.Errorf("rebooted after %v, want about 1 s", el)
	}
}

func TestMAC(t *testing.T) {
	for _, tc := range []struct {
		prefix string
		n      int
		want   string
	}{
		{"", 1, "aa:bb:cc:00:00:01"},
		{"AA:BB:CC", 258, "aa:bb:cc:00:01:02"},
		{"02:00:00:00:00", 255, "02:00:00:00:00:ff"},
	} {
		if got, err := sim.MAC(tc.prefix, tc.n); err != nil || got != tc.want {
			t.Errorf("MAC(%q, %d) = %q, %v; want %q", tc.prefix, tc.n, got, err, tc.want)
		}
	}
	if _, err := sim.MAC("02:00:00:00:00", 256); err == nil {
		t.Error("overflow not detected")
	}
	if _, err := sim.MAC("xyz", 1); err == nil {
		t.Error("bad prefix not detected")
	}
}

func TestFleet(t *testing.T) {
	h := newFakeHub(t)
	f, err := sim.NewFleet(sim.FleetConfig{Base: sim.Config{URL: h.URL}, Count: 3, Profiles: sim.DemoProfiles})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { f.Run(ctx); close(done) }()
	ids := map[string]string{}
	for range 3 {
		hc := h.accept(t)
		ids[hc.req.Header.Get("Device-Id")] = string(hc.hello)
	}
	waitFor(t, func() bool { return f.Connected() == 3 })
	cancel()
	<-done
	if !strings.Contains(ids["aa:bb:cc:00:00:01"], `"mcp":true`) || strings.Contains(ids["aa:bb:cc:00:00:03"], "mcp") {
		t.Errorf("profiles not applied: %v", ids)
	}
	if f.Devices[0].Config().Room != "客厅" || !f.Devices[0].Config().Lamp {
		t.Errorf("profile 0: %+v", f.Devices[0].Config())
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
