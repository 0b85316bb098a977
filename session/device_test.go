package session_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/protocol"
	"github.com/xiaozhi-hub/hub/registry"
	"github.com/xiaozhi-hub/hub/registry/registrytest"
	"github.com/xiaozhi-hub/hub/session"
)

// These tests drive one session through its Connection seam (pipeConn,
// transport_test.go), playing the device's side by hand: what a device and
// the people using the hub would notice, without a WebSocket or a server.

// fakeDevice is the device's side of a pipeConn served by a session.
type fakeDevice struct {
	t   *testing.T
	c   *pipeConn
	reg *registry.Registry
	id  string
	sid string // from the server hello
}

// serveDevice serves a pipeConn for device id with opts over a registry on
// SQLite, sends hello (a JSON hello; "" sends none) and reads the server
// hello.
func serveDevice(t *testing.T, opts session.Options, id, hello string) *fakeDevice {
	t.Helper()
	if opts.Registry == nil {
		opts.Registry = registrytest.NewRegistry(t)
	}
	srv := session.New(opts)
	t.Cleanup(srv.Close)
	d := &fakeDevice{t: t, c: newPipeConn(), reg: opts.Registry, id: id}
	d.send(hello)
	if !srv.Serve(d.c, protocol.Identity{DeviceID: id, ClientID: "c-" + id}, "test "+id) {
		t.Fatal("Serve refused the connection")
	}
	h := d.next()
	if h["type"] != "hello" {
		t.Fatalf("the hub answered the hello with %v", h)
	}
	d.sid, _ = h["session_id"].(string)
	return d
}

func (d *fakeDevice) send(msg string) {
	d.c.in <- session.Message{Kind: session.TextMessage, Text: []byte(msg), Size: len(msg)}
}

// next is the hub's next text message to the device.
func (d *fakeDevice) next() map[string]any {
	d.t.Helper()
	select {
	case b := <-d.c.out:
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			d.t.Fatalf("hub sent %q: %v", b, err)
		}
		return m
	case <-time.After(10 * time.Second):
		d.t.Fatal("the hub sent nothing")
		return nil
	}
}

// request is the hub's next JSON-RPC request (notifications skipped): its
// method, id (as JSON) and params.
func (d *fakeDevice) request() (method string, id json.RawMessage, params map[string]any) {
	d.t.Helper()
	for {
		m := d.next()
		if m["type"] != "mcp" || m["session_id"] != d.sid {
			d.t.Fatalf("hub sent %v: want an mcp message in session %s", m, d.sid)
		}
		p, _ := m["payload"].(map[string]any)
		if p["id"] == nil {
			continue // notifications/initialized
		}
		id, _ = json.Marshal(p["id"])
		params, _ = p["params"].(map[string]any)
		return p["method"].(string), id, params
	}
}

// reply answers request id with result, in a message whose session_id is
// not the one the hub gave: the hub does not check it (docs/protocol.md §5.1).
func (d *fakeDevice) reply(id json.RawMessage, result string) {
	d.send(`{"session_id":"stale-id","type":"mcp","payload":{"jsonrpc":"2.0","id":` + string(id) + `,"result":` + result + `}}`)
}

// expect takes the hub's next request, which must be method, and answers it.
func (d *fakeDevice) expect(method, result string) map[string]any {
	d.t.Helper()
	m, id, params := d.request()
	if m != method {
		d.t.Fatalf("hub asked %s, want %s", m, method)
	}
	d.reply(id, result)
	return params
}

const (
	mcpHello   = `{"type":"hello","version":3,"transport":"udp","features":{"mcp":true},"audio_params":{"format":"opus","sample_rate":16000,"channels":1,"frame_duration":60}}`
	plainHello = `{"type":"hello","version":1,"transport":"udp"}`
	initResult = `{"protocolVersion":"2024-11-05","capabilities":{"tools":{}},"serverInfo":{"name":"bread-compact-wifi","version":"2.4.2"}}`
)

func tool(name string) string {
	return `{"name":"` + name + `","description":"` + name + `","inputSchema":{"type":"object","properties":{"volume":{"type":"integer","minimum":0,"maximum":100}}}}`
}

// waitEvent returns the next event of the device's of those in events.
func waitEvent(t *testing.T, events <-chan hub.Event, id string) hub.Event {
	t.Helper()
	for {
		select {
		case ev := <-events:
			if ev.DeviceID == id {
				return ev
			}
		case <-time.After(10 * time.Second):
			t.Fatal("no event")
		}
	}
}

func data(ev hub.Event) string {
	b, _ := json.Marshal(ev.Data)
	return string(b)
}

// At hello the hub discovers the device's tools: initialize, then
// tools/list page by page (the cursor of each page asked for the next);
// the whole list is cached, the board named, and a call through the
// registry reaches the device as tools/call and is answered with the
// device's result. Replies carrying a stale session_id are accepted.
func TestDiscoveryPagesAndACall(t *testing.T) {
	reg := registrytest.NewRegistry(t)
	changed, stop := reg.Subscribe(hub.EventToolsChanged)
	defer stop()
	d := serveDevice(t, session.Options{Registry: reg}, "aa:00:00:00:0a:01", mcpHello)

	d.expect("initialize", initResult)
	if p := d.expect("tools/list", `{"tools":[`+tool("self.a")+`,`+tool("self.b")+`],"nextCursor":"page-2"}`); p["cursor"] != nil && p["cursor"] != "" {
		t.Fatalf("the first tools/list has cursor %v", p["cursor"])
	}
	if p := d.expect("tools/list", `{"tools":[`+tool("self.c")+`]}`); p["cursor"] != "page-2" {
		t.Fatalf("the second tools/list asked for cursor %v, want the first page's nextCursor", p["cursor"])
	}
	waitEvent(t, changed, d.id)
	tools, stale, err := reg.Tools(d.id)
	if err != nil || stale || len(tools) != 3 || tools[2].Name != "self.c" {
		t.Fatalf("tools %v (stale %v, %v): want the three tools of both pages", tools, stale, err)
	}
	if dev, _ := reg.Device(d.id); !dev.Online || dev.Board != "bread-compact-wifi" {
		t.Fatalf("device %+v: want online, its board from initialize", dev)
	}

	type result struct {
		res hub.CallResult
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := reg.CallTool(context.Background(), registry.CallRequest{DeviceID: d.id, Tool: "self.b", Arguments: json.RawMessage(`{"volume":7}`)})
		done <- result{res, err}
	}()
	params := d.expect("tools/call", `{"content":[{"type":"text","text":"volume 7"}],"isError":false}`)
	if args, _ := json.Marshal(params["arguments"]); params["name"] != "self.b" || string(args) != `{"volume":7}` {
		t.Fatalf("tools/call params %v", params)
	}
	r := <-done
	if r.err != nil || r.res.IsError || !strings.Contains(string(r.res.Content), `"text":"volume 7"`) {
		t.Fatalf("call result %+v, %v: want the device's text", r.res, r.err)
	}
}

// discovered serves an MCP device with the given tools (JSON) and answers
// the hub's discovery; it returns once the tools are cached, with the
// registry's tools_changed events of the device to come.
func discovered(t *testing.T, id string, tools ...string) (*fakeDevice, <-chan hub.Event) {
	t.Helper()
	reg := registrytest.NewRegistry(t)
	changed, stop := reg.Subscribe(hub.EventToolsChanged)
	t.Cleanup(stop)
	d := serveDevice(t, session.Options{Registry: reg}, id, mcpHello)
	d.expect("initialize", initResult)
	d.expect("tools/list", `{"tools":[`+strings.Join(tools, ",")+`]}`)
	waitEvent(t, changed, d.id)
	return d, changed
}

// A device's tools/list_changed notification makes the hub list again; the
// cache follows the device's new list.
func TestListChangedListsAgain(t *testing.T) {
	d, changed := discovered(t, "aa:00:00:00:0a:02", tool("self.a"))
	reg := d.reg
	d.send(`{"session_id":"","type":"mcp","payload":{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}}`)
	d.expect("tools/list", `{"tools":[`+tool("self.a")+`,`+tool("self.new")+`]}`)
	waitEvent(t, changed, d.id)
	if tools, _, _ := reg.Tools(d.id); len(tools) != 2 {
		t.Fatalf("tools %v after list_changed: want the new list", tools)
	}
}

// A reply the firmware broke (an error message with an unescaped quote,
// docs/protocol.md §12.25) fails the call it answers at once, as a device
// error, instead of leaving it to its timeout; the device stays connected.
func TestBrokenReplyFailsItsCallAtOnce(t *testing.T) {
	d, _ := discovered(t, "aa:00:00:00:0a:03", tool("self.mode"))
	reg := d.reg
	errc := make(chan error, 1)
	go func() {
		_, err := reg.CallTool(context.Background(), registry.CallRequest{DeviceID: d.id, Tool: "self.mode", Timeout: time.Minute})
		errc <- err
	}()
	_, id, _ := d.request()
	d.send(`{"session_id":"` + d.sid + `","type":"mcp","payload":{"jsonrpc":"2.0","id":` + string(id) + `,"error":{"message":"Invalid mode: a"b"}}}`)
	if err := <-errc; hub.ErrorCode(err) != hub.EDEVICE {
		t.Fatalf("the call answered with a broken reply: %v; want a device error", err)
	}
	if dev, _ := reg.Device(d.id); !dev.Online {
		t.Fatal("a broken reply disconnected the device")
	}
}

// A legacy device's IoT descriptors and states are kept as things with
// their state.
func TestIoTDescriptorsAndStates(t *testing.T) {
	reg := registrytest.NewRegistry(t)
	iotChanged, stop := reg.Subscribe(hub.EventIoTChanged)
	defer stop()
	d := serveDevice(t, session.Options{Registry: reg}, "aa:00:00:00:0a:04", plainHello)
	d.send(`{"session_id":"` + d.sid + `","type":"iot","update":true,"descriptors":[{"name":"Lamp","description":"A test lamp","properties":{"power":{"description":"Whether the lamp is on","type":"boolean"}},"methods":{"turn_on":{"description":"Turn on the lamp","parameters":{}}}}]}`)
	d.send(`{"session_id":"` + d.sid + `","type":"iot","update":true,"states":[{"name":"Lamp","state":{"power":true}}]}`)
	for {
		waitEvent(t, iotChanged, d.id)
		things, err := reg.Things(d.id)
		if err != nil {
			t.Fatal(err)
		}
		if len(things) == 1 && string(things[0].State["power"]) == "true" {
			if _, ok := things[0].Methods["turn_on"]; !ok || things[0].Description != "A test lamp" {
				t.Fatalf("thing %+v: want the descriptor's methods and description", things[0])
			}
			return
		}
	}
}

// conversations records what the session hands its conversations.
type conversations struct {
	mu     sync.Mutex
	log    []string
	opened chan session.ConversationOutput
}

func newConversations() *conversations {
	return &conversations{opened: make(chan session.ConversationOutput, 4)}
}

func (v *conversations) Open(id, lang string, _ protocol.AudioParams, aec bool, out session.ConversationOutput) session.Conversation {
	v.add(fmt.Sprintf("open %s %q aec=%v", id, lang, aec))
	v.opened <- out
	return conversation{v}
}

func (v *conversations) add(s string) { v.mu.Lock(); v.log = append(v.log, s); v.mu.Unlock() }
func (v *conversations) all() string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return strings.Join(v.log, " | ")
}

type conversation struct{ v *conversations }

func (c conversation) Listen(state, mode, text string) {
	c.v.add("listen " + state + " " + mode + " " + text)
}
func (c conversation) Abort()                       { c.v.add("abort") }
func (c conversation) Audio(opus []byte, ts uint32) { c.v.add(fmt.Sprintf("audio %x@%d", opus, ts)) }
func (c conversation) Close()                       { c.v.add("close") }

// The device's listen, abort and audio reach its conversation in the order
// they came (audio before the hello is dropped); the conversation starts
// at the first of them, with the hello's language and features.aec, and
// ends with the connection. A conversation that ends itself closes the
// connection with its reason, which is the offline event's.
func TestConversationGetsListenAbortAndAudioInOrder(t *testing.T) {
	reg := registrytest.NewRegistry(t)
	offline, stop := reg.Subscribe(hub.EventOffline)
	defer stop()
	heard, stopHeard := reg.Subscribe(hub.EventDeviceMessage)
	defer stopHeard()
	v := newConversations()
	c := newPipeConn()
	c.in <- session.Message{Kind: session.AudioMessage, Audio: session.AudioFrame{Data: []byte{0xee}}, Size: 5}
	d := &fakeDevice{t: t, c: c, reg: reg, id: "aa:00:00:00:0a:05"}
	d.send(`{"type":"hello","version":3,"transport":"udp","language":"en-US","features":{"aec":true}}`)
	srv := session.New(session.Options{Registry: reg, Voice: v})
	t.Cleanup(srv.Close)
	if !srv.Serve(c, protocol.Identity{DeviceID: d.id}, "test") {
		t.Fatal("Serve refused the connection")
	}
	d.next() // the server hello
	if got := v.all(); got != "" {
		t.Fatalf("a conversation was opened before the device did anything: %s", got)
	}
	d.send(`{"session_id":"x","type":"listen","state":"start","mode":"realtime"}`)
	c.in <- session.Message{Kind: session.AudioMessage, Audio: session.AudioFrame{Data: []byte{1, 2}, Timestamp: 60}, Size: 6}
	c.in <- session.Message{Kind: session.AudioMessage, Err: errors.New("short frame"), Size: 3} // dropped, counted as bad input
	d.send(`{"session_id":"x","type":"listen","state":"detect","text":"你好小智"}`)
	d.send(`{"session_id":"x","type":"abort","reason":"wake_word_detected"}`)
	c.in <- session.Message{Kind: session.AudioMessage, Audio: session.AudioFrame{Data: []byte{3}, Timestamp: 120}, Size: 5}
	d.send(`{"session_id":"x","type":"listen","state":"stop"}`)

	for ev := waitEvent(t, heard, d.id); !strings.Contains(data(ev), `"state":"stop"`); ev = waitEvent(t, heard, d.id) {
	} // the device's last message was handled
	out := <-v.opened
	if err := out.WriteText(context.Background(), []byte(`{"type":"tts","state":"start"}`)); err != nil {
		t.Fatal(err)
	}
	if m := d.next(); m["type"] != "tts" {
		t.Fatalf("the conversation's message reached the device as %v", m)
	}
	out.End("no speech for 30 s")
	ev := waitEvent(t, offline, d.id)
	if data(ev) != `{"reason":"no speech for 30 s"}` {
		t.Fatalf("offline event %s: want the conversation's reason", data(ev))
	}
	c.mu.Lock()
	reason := c.reason
	c.mu.Unlock()
	if reason != "no speech for 30 s" {
		t.Fatalf("the connection was closed with %q", reason)
	}
	want := `open aa:00:00:00:0a:05 "en-US" aec=true | listen start realtime  | audio 0102@60 | listen detect  你好小智 | abort | audio 03@120 | listen stop   | close`
	if got := v.all(); got != want {
		t.Fatalf("the conversation got\n%s\nwant\n%s", got, want)
	}
}

// What ends a session is the offline event's reason: the transport's own
// words, or the hub's when it shuts down.
func TestCloseReasons(t *testing.T) {
	reg := registrytest.NewRegistry(t)
	offline, stop := reg.Subscribe(hub.EventOffline)
	defer stop()
	srv := session.New(session.Options{Registry: reg})
	c := newPipeConn()
	c.in <- session.Message{Kind: session.TextMessage, Text: []byte(plainHello)}
	if !srv.Serve(c, protocol.Identity{DeviceID: "aa:00:00:00:0a:06"}, "test") {
		t.Fatal("Serve refused the connection")
	}
	<-c.out
	srv.Close()
	if ev := waitEvent(t, offline, "aa:00:00:00:0a:06"); data(ev) != `{"reason":"closed by the hub"}` {
		t.Fatalf("offline at shutdown: %s", data(ev))
	}
	late := newPipeConn()
	late.in <- session.Message{Kind: session.TextMessage, Text: []byte(plainHello)}
	if srv.Serve(late, protocol.Identity{DeviceID: "aa:00:00:00:0a:07"}, "test") {
		t.Fatal("a hub that is shutting down served a new device")
	}
	late.mu.Lock()
	defer late.mu.Unlock()
	if late.reason != "hub shutting down" {
		t.Fatalf("a device connecting during shutdown was closed with %q", late.reason)
	}
}

// A malformed hello is refused with the reason, and the device never shows
// online; a connection that sends no hello is dropped after HelloTimeout.
func TestBadOrMissingHello(t *testing.T) {
	reg := registrytest.NewRegistry(t)
	srv := session.New(session.Options{Registry: reg, HelloTimeout: 50 * time.Millisecond})
	t.Cleanup(srv.Close)
	bad := newPipeConn()
	bad.in <- session.Message{Kind: session.TextMessage, Text: []byte(`not json`)} // before the hello: skipped
	bad.in <- session.Message{Kind: session.TextMessage, Text: []byte(`{"type":"hello","version":"three","transport":"udp"}`)}
	if srv.Serve(bad, protocol.Identity{DeviceID: "aa:00:00:00:0a:08"}, "test") {
		t.Fatal("a malformed hello was accepted")
	}
	bad.mu.Lock()
	reason := bad.reason
	bad.mu.Unlock()
	if reason == "" {
		t.Fatal("a malformed hello was refused without a reason")
	}
	if _, err := reg.Device("aa:00:00:00:0a:08"); hub.ErrorCode(err) != hub.ENOTFOUND {
		t.Fatalf("a device refused at hello is known: %v", err)
	}
	if srv.Serve(newPipeConn(), protocol.Identity{DeviceID: "aa:00:00:00:0a:09"}, "test") {
		t.Fatal("a connection without a hello was served")
	}
}

// Malformed messages are counted as bad input and recorded, and the
// device stays connected and heard (docs/protocol.md §5.1): text that is
// not JSON, an mcp message without a payload object, mcp from a device
// that did not announce MCP, a broken IoT message. A second hello on the
// connection changes nothing.
func TestBadInputKeepsTheDevice(t *testing.T) {
	reg := registrytest.NewRegistry(t)
	events, stop := reg.Subscribe(hub.EventProtocolError, hub.EventDeviceMessage)
	defer stop()
	d := serveDevice(t, session.Options{Registry: reg}, "aa:00:00:00:0a:0a", plainHello)
	for _, tc := range []struct{ msg, want string }{
		{`{"type":"listen","state":"start"`, `"reason":"bad_message"`},
		{`["not","an","object"]`, `"reason":"bad_message"`},
		{`{"type":"mcp","payload":{"jsonrpc":"2.0","id":1,"result":{}}}`, `"reason":"mcp_without_feature"`},
		{`{"type":"iot","descriptors":"lamp"}`, `"reason":"bad_iot"`},
		{plainHello, `"note":"repeated hello ignored"`},
		{`{"session_id":"wrong","type":"custom_thing"}`, `"type":"custom_thing"`},
	} {
		d.send(tc.msg)
		if ev := waitEvent(t, events, d.id); !strings.Contains(data(ev), tc.want) {
			t.Fatalf("%s: event %s %s, want %s", tc.msg, ev.Type, data(ev), tc.want)
		}
	}
	if dev, _ := reg.Device(d.id); !dev.Online {
		t.Fatal("bad input disconnected the device")
	}
}

// Over WebSocket, a frame larger than MaxMessageBytes ends the connection
// with 1009, and the device goes offline with the reason in words.
func TestOversizedFrameEndsTheConnection(t *testing.T) {
	reg, url := startHub(t, session.Options{MaxMessageBytes: 1024})
	offline, stop := reg.Subscribe(hub.EventOffline)
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: http.Header{"Device-Id": {"aa:00:00:00:0a:0b"}, "Client-Id": {"raw"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	if err := c.Write(ctx, websocket.MessageText, []byte(`{"type":"hello","version":1,"transport":"websocket"}`)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Read(ctx); err != nil {
		t.Fatal(err)
	}
	big := `{"type":"custom","pad":"` + strings.Repeat("x", 2048) + `"}`
	if err := c.Write(ctx, websocket.MessageText, []byte(big)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Read(ctx); websocket.CloseStatus(err) != websocket.StatusMessageTooBig {
		t.Fatalf("after an oversized frame the device read %v; want close 1009", err)
	}
	if ev := waitEvent(t, offline, "aa:00:00:00:0a:0b"); data(ev) != `{"reason":"frame larger than the hub accepts"}` {
		t.Fatalf("offline event %s", data(ev))
	}
}
