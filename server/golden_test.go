package server_test

// Golden device conversations, in the manner of go-sdk's conformance tests:
// each testdata/*.txtar file is a device script and the hub's side of the
// conversation. A real hub (servertest) runs on loopback; a small scripted
// device speaks raw WebSocket frames, or raw MQTT 3.1.1 packets and UDP
// datagrams, byte for byte as written in the file (not package sim or
// sim/mqttdevice, which are our own models of the firmware). What the hub
// sends the device, and what its API answers, is compared with the file's
// "hub" section; run with -update to rewrite that section.
//
// File sections:
//
//	-- config --    the hub, one setting a line (none: a plain hub):
//	                  mqtt              the embedded MQTT broker and UDP audio
//	                                    on loopback (device-auth token)
//	                  voice DEVICE TOOL stand-in speech recognition, model and
//	                                    synthesis over their real wire formats
//	                                    (providers, talk_e2e_test.go); the
//	                                    model calls TOOL of DEVICE, then says
//	                                    "好的，客厅的灯已经打开了。"
//	                  speech-seconds N  each synthesis is N s of tone (1)
//	                  asr-audio VALUE   the recognizer's upload (wav, ogg-opus)
//	                  conversation-timeout DURATION
//	-- connect --   WebSocket upgrade request headers, one "Name: value" a
//	                line; the device connects at the start
//	-- ota --       the OTA check's headers, a blank line and its body
//	-- device --    the script, one step a line ("#" starts a comment):
//	                  send <text>       the device sends a text frame (MQTT: a
//	                                    PUBLISH to its publish_topic); $SID is
//	                                    the session_id of the hub's last
//	                                    hello, $ID the id of the last request
//	                                    received
//	                  recv              the next message from the hub is
//	                                    recorded
//	                  send audio        1.2 s of speech as the firmware sends
//	                                    it: 20 Opus frames (16 kHz, 60 ms) as
//	                                    binary frames, or datagrams on the UDP
//	                                    channel of the last hello (then it
//	                                    waits until the hub took all 20)
//	                  recv audio N      N audio frames from the hub (binary
//	                                    frames, or UDP datagrams: then also
//	                                    any more already there); the record
//	                                    gives their count and shape
//	                  recv audio *      the binary frames until the next text
//	                                    frame, however many
//	                  ota               the OTA check of section "ota"
//	                  mqtt connect      CONNECT (MQTT 3.1.1, clean session)
//	                                    with the login of the OTA answer's
//	                                    "mqtt" object
//	                  call METHOD PATH [JSON]
//	                                    an API request is started (admin token)
//	                  await             the oldest started request's answer is
//	                                    recorded
//	                  get PATH until TEXT
//	                                    GET PATH is polled until its answer
//	                                    contains TEXT, then recorded
//	-- hub --       the expected record
//
// A line "skip: <reason>" in the comment skips the file (for behaviour that
// another branch brings; the reason says which).
//
// The record is stable: the session ids of the hub's hellos become <sid>,
// <sid2>, … (and another one, that of an MQTT connection, <conn-sid>), the
// UDP keys and nonces <key>, <nonce>, <key2>, … in order of appearance, the ids
// the hub gives its requests <id1>, <id2>, …, the device's token <token>,
// ports <port>, <mqtt-port> and <udp-port>; API answers are re-encoded with
// sorted keys, and timestamps and durations are replaced.

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

var update = flag.Bool("update", false, "rewrite the hub section of testdata/*.txtar from what the hub does")

func TestGoldenConversations(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txtar")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden conversations in testdata: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			ar := parseTxtar(data)
			if m := regexp.MustCompile(`(?m)^skip: (.*)$`).FindSubmatch(ar.comment); m != nil {
				t.Skip(string(m[1])) // its hub section is written by hand until then
			}
			got := runConversation(t, ar)
			want := ar.section("hub")
			if *update {
				ar.set("hub", got)
				if err := os.WriteFile(file, ar.format(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if !bytes.Equal(got, want) {
				t.Errorf("the hub's side of the conversation differs (run go test ./server -run TestGoldenConversations -update and review the diff)\n--- want\n%s--- got\n%s", want, got)
			}
		})
	}
}

// conversation is one scripted device against the hub.
type conversation struct {
	t       *testing.T
	ctx     context.Context
	h       *testHub
	ar      *txtar
	c       *websocket.Conn // the WebSocket device, if section "connect"
	held    []byte          // a text frame read while counting audio
	mq      *mqttClient     // the MQTT device, after "mqtt connect"
	login   otaMQTT         // from the OTA answer
	udp     *udpChannel     // the audio channel of the last hello over MQTT
	out     bytes.Buffer
	sid     string            // of the hub's last hello
	audio   audioShape        // of the hub's last hello
	names   map[string]string // values that vary → <sid>, <key2>, …
	counts  map[string]int    // placeholders given, by kind
	lastID  string
	ids     map[string]string // hub-assigned id → <idN>
	pending []chan string     // API answers, oldest first
	labels  []string          // and their "METHOD PATH"
}

func runConversation(t *testing.T, ar *txtar) []byte {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cv := &conversation{t: t, ctx: ctx, ar: ar, h: goldenHub(t, ar.section("config")), audio: audioShape{rate: 24000, ms: 60},
		names: map[string]string{}, counts: map[string]int{}, ids: map[string]string{}}
	defer cv.close()
	cv.names[strings.TrimPrefix(cv.h.URL(), "http://")] = "127.0.0.1:<port>"
	if hdr := ar.section("connect"); len(hdr) > 0 {
		header, _ := parseHeaders(hdr)
		c, _, err := websocket.Dial(ctx, cv.h.DeviceURL(), &websocket.DialOptions{HTTPHeader: header})
		if err != nil {
			t.Fatalf("connect: %v", err)
		}
		c.SetReadLimit(1 << 20)
		cv.c = c
	}
	for n, line := range strings.Split(string(ar.section("device")), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		verb, rest, _ := strings.Cut(line, " ")
		if err := cv.step(verb, rest); err != nil {
			t.Fatalf("device line %d (%s): %v\nrecord so far:\n%s", n+1, line, err, cv.out.Bytes())
		}
	}
	// Every started request must have been awaited: its answer is part of
	// the conversation.
	if len(cv.pending) > 0 {
		t.Fatalf("%d API requests were started but not awaited", len(cv.pending))
	}
	return cv.out.Bytes()
}

func (cv *conversation) close() {
	if cv.c != nil {
		cv.c.CloseNow()
	}
	if cv.udp != nil {
		cv.udp.close()
	}
	if cv.mq != nil {
		cv.mq.close()
	}
}

func (cv *conversation) step(verb, rest string) error {
	switch {
	case verb == "send" && rest == "audio":
		return cv.sendAudio()
	case verb == "send":
		return cv.send(strings.ReplaceAll(strings.ReplaceAll(rest, "$SID", cv.sid), "$ID", cv.lastID))
	case verb == "recv" && strings.HasPrefix(rest, "audio "):
		return cv.recvAudio(strings.TrimPrefix(rest, "audio "))
	case verb == "recv":
		data, err := cv.recv()
		if err != nil {
			return err
		}
		if data == nil {
			return nil // binary, recorded
		}
		cv.learn(data)
		fmt.Fprintf(&cv.out, "recv %s\n", cv.normalize(data))
	case verb == "ota":
		return cv.ota()
	case verb == "mqtt" && rest == "connect":
		return cv.mqttConnect()
	case verb == "call":
		fields := strings.SplitN(rest, " ", 3)
		if len(fields) < 2 {
			return fmt.Errorf("want call METHOD PATH [JSON]")
		}
		var body string
		if len(fields) == 3 {
			body = fields[2]
		}
		ch := make(chan string, 1)
		cv.pending = append(cv.pending, ch)
		label := fields[0] + " " + fields[1]
		// The answer is normalised by await, on this goroutine: the
		// id map is only touched here.
		go func() { ch <- cv.api(fields[0], fields[1], body) }()
		cv.labels = append(cv.labels, label)
	case verb == "await":
		if len(cv.pending) == 0 {
			return fmt.Errorf("no API request to await")
		}
		ch, label := cv.pending[0], cv.labels[0]
		cv.pending, cv.labels = cv.pending[1:], cv.labels[1:]
		select {
		case s := <-ch:
			fmt.Fprintf(&cv.out, "api %s -> %s\n", label, cv.normalize([]byte(s)))
		case <-cv.ctx.Done():
			return cv.ctx.Err()
		}
	case verb == "get":
		path, text, ok := strings.Cut(rest, " until ")
		if !ok {
			return fmt.Errorf("want get PATH until TEXT")
		}
		var last string
		deadline := time.Now().Add(10 * time.Second)
		for last = cv.normalize([]byte(cv.api("GET", path, ""))); !strings.Contains(last, text); last = cv.normalize([]byte(cv.api("GET", path, ""))) {
			if time.Now().After(deadline) {
				return fmt.Errorf("GET %s never contained %s; last: %s", path, text, last)
			}
			time.Sleep(10 * time.Millisecond)
		}
		fmt.Fprintf(&cv.out, "api GET %s -> %s\n", path, last)
	default:
		return fmt.Errorf("unknown step %q", verb)
	}
	return nil
}

// send sends one text message on the device's connection.
func (cv *conversation) send(text string) error {
	if cv.mq != nil {
		if strings.Contains(text, `"type":"goodbye"`) && cv.udp != nil {
			cv.udp.close() // the firmware tears down UDP, then says goodbye (§4.4)
			cv.udp = nil
		}
		return cv.mq.publish(cv.login.PublishTopic, []byte(text))
	}
	if cv.c == nil {
		return fmt.Errorf("the device is not connected")
	}
	return cv.c.Write(cv.ctx, websocket.MessageText, []byte(text))
}

// recv returns the next text message from the hub; a binary frame is
// recorded here, and recv returns nil for it.
func (cv *conversation) recv() ([]byte, error) {
	rctx, cancel := context.WithTimeout(cv.ctx, 10*time.Second)
	defer cancel()
	if cv.mq != nil {
		m, err := cv.mq.next(rctx)
		if err == nil && bytes.Contains(m, []byte(`"type":"goodbye"`)) && cv.udp != nil {
			cv.udp.close() // the device closes its channel on the server's goodbye
			cv.udp = nil
		}
		return m, err
	}
	if cv.held != nil {
		data := cv.held
		cv.held = nil
		return data, nil
	}
	if cv.c == nil {
		return nil, fmt.Errorf("the device is not connected")
	}
	typ, data, err := cv.c.Read(rctx)
	if err != nil {
		return nil, fmt.Errorf("no frame from the hub: %w", err)
	}
	if typ != websocket.MessageText {
		fmt.Fprintf(&cv.out, "recv binary %d bytes\n", len(data))
		return nil, nil
	}
	return data, nil
}

// learn takes the session id (and over MQTT the audio channel) from the
// hub's hello and the id of a request.
func (cv *conversation) learn(data []byte) {
	var m struct {
		Type        string          `json:"type"`
		SessionID   string          `json:"session_id"`
		UDP         json.RawMessage `json:"udp"`
		AudioParams struct {
			SampleRate    int `json:"sample_rate"`
			FrameDuration int `json:"frame_duration"`
		} `json:"audio_params"`
		Payload struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		} `json:"payload"`
	}
	if json.Unmarshal(data, &m) != nil {
		return
	}
	if m.Type == "hello" && m.SessionID != "" {
		cv.sid = m.SessionID
		cv.name(m.SessionID, "sid")
		if m.AudioParams.SampleRate > 0 {
			cv.audio = audioShape{rate: m.AudioParams.SampleRate, ms: m.AudioParams.FrameDuration}
		}
		if len(m.UDP) > 0 {
			cv.openUDP(m.UDP)
		}
	} else if m.SessionID != "" {
		cv.name(m.SessionID, "conn-sid") // over MQTT: the connection's, not a conversation's (§4.4)
	}
	if m.Payload.Method != "" && len(m.Payload.ID) > 0 {
		cv.lastID = string(m.Payload.ID)
		if _, ok := cv.ids[cv.lastID]; !ok {
			cv.ids[cv.lastID] = fmt.Sprintf("<id%d>", len(cv.ids)+1)
		}
	}
}

// name gives a value that varies from run to run its placeholder: <kind>
// for the first of its kind, then <kind2>, <kind3>, …
func (cv *conversation) name(value, kind string) {
	if value == "" || cv.names[value] != "" {
		return
	}
	cv.counts[kind]++
	if n := cv.counts[kind]; n > 1 {
		cv.names[value] = fmt.Sprintf("<%s%d>", kind, n)
	} else {
		cv.names[value] = "<" + kind + ">"
	}
}

// jsonrpcID matches an id, also inside a JSON string (escaped quotes).
var jsonrpcID = regexp.MustCompile(`(\\?"id\\?":)(\d+)`)

// normalize replaces the values that vary and the ids the hub assigned.
func (cv *conversation) normalize(data []byte) string {
	s := string(data)
	values := slices.Collect(maps.Keys(cv.names))
	slices.SortFunc(values, func(a, b string) int { return cmp.Or(len(b)-len(a), strings.Compare(a, b)) })
	for _, v := range values {
		s = strings.ReplaceAll(s, v, cv.names[v])
	}
	return jsonrpcID.ReplaceAllStringFunc(s, func(m string) string {
		sub := jsonrpcID.FindStringSubmatch(m)
		if n, ok := cv.ids[sub[2]]; ok {
			return sub[1] + n
		}
		return m
	})
}
