package server_test

import (
	"cmp"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/xiaozhi-hub/hub/catalog"
	"github.com/xiaozhi-hub/hub/ogg"
	"github.com/xiaozhi-hub/hub/opus"
	"github.com/xiaozhi-hub/hub/protocol"
	"github.com/xiaozhi-hub/hub/server"
	"github.com/xiaozhi-hub/hub/sim"
	"github.com/xiaozhi-hub/hub/sim/mqttdevice"
	"github.com/xiaozhi-hub/hub/wav"
)

// providers stands in for OpenAI at the edge the hub cannot reach: speech
// recognition, the model and speech synthesis, each over its real wire
// format, recording what the hub sent.
type providers struct {
	t        *testing.T
	srv      *httptest.Server
	lampTool string
	args     string // the arguments the model calls lampTool with (default {})
	mu       sync.Mutex
	heardMs  int      // length of the audio the recognizer received
	system   string   // the model's system prompt
	tools    []string // the tools offered in the last request to the model
	results  []string // the tool results the model was sent
	sent     []int    // messages in each request to the model, system prompt included
	spoken   []string
	voices   []string
	seconds  int      // of speech per synthesis (default 1)
	upload   string   // the last transcription's file: "wav" or "ogg"
	packets  [][]byte // the Opus packets of the last Ogg upload
}

// hearOgg reads an Ogg Opus upload as a transcription server would: the
// stream checked page by page (ogg.Read), and every packet decoded; a bad
// file is answered 400.
func (p *providers) hearOgg(w http.ResponseWriter, f io.Reader, ctype string) bool {
	b, _ := io.ReadAll(f)
	s, err := ogg.Read(b)
	if err == nil && (ctype != "audio/ogg" || s.Channels != 1 || s.InputRate != 16000) {
		err = fmt.Errorf("%s, %d channels at %d Hz", ctype, s.Channels, s.InputRate)
	}
	samples := 0
	dec, _ := opus.NewDecoder(16000)
	for i := 0; err == nil && i < len(s.Packets); i++ {
		var pcm []int16
		pcm, err = dec.Decode(s.Packets[i])
		samples += len(pcm)
	}
	if err != nil {
		p.t.Errorf("transcription audio: %v", err)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return false
	}
	p.mu.Lock()
	p.heardMs, p.upload, p.packets = samples/16, "ogg", s.Packets
	p.mu.Unlock()
	return true
}

const answer = "好的，客厅的灯已经打开了。"

func newProviders(t *testing.T, lampTool string) *providers {
	p := &providers{t: t, lampTool: lampTool}
	p.srv = httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *providers) serve(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "Bearer sk-test" {
		p.t.Errorf("%s without the API key", r.URL.Path)
	}
	switch r.URL.Path {
	case "/v1/audio/transcriptions":
		f, hdr, err := r.FormFile("file")
		if err != nil {
			p.t.Errorf("transcription without a file: %v", err)
			return
		}
		if strings.HasSuffix(hdr.Filename, ".ogg") {
			if !p.hearOgg(w, f, hdr.Header.Get("Content-Type")) {
				return
			}
		} else {
			pcm, rate, err := wav.Decode(f, 1<<22)
			if err != nil {
				p.t.Errorf("transcription audio: %v", err)
			}
			p.mu.Lock()
			p.heardMs, p.upload = len(pcm)*1000/max(rate, 1), "wav"
			p.mu.Unlock()
		}
		fmt.Fprint(w, `{"text":"打开客厅的灯"}`)
	case "/v1/chat/completions":
		var req struct {
			Messages []struct {
				Role    string `json:"role"`
				Content any    `json:"content"`
			} `json:"messages"`
			Tools []struct {
				Function struct{ Name string } `json:"function"`
			} `json:"tools"`
			Stream bool `json:"stream"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		p.mu.Lock()
		p.system = fmt.Sprint(req.Messages[0].Content)
		p.tools = p.tools[:0]
		for _, tl := range req.Tools {
			p.tools = append(p.tools, tl.Function.Name)
		}
		if m := req.Messages[len(req.Messages)-1]; m.Role == "tool" {
			p.results = append(p.results, fmt.Sprint(m.Content))
		}
		p.sent = append(p.sent, len(req.Messages))
		p.mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		chunk := func(delta string, finish string) {
			d, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"delta": json.RawMessage(delta), "finish_reason": finish}}})
			fmt.Fprintf(w, "data: %s\n\n", d)
			w.(http.Flusher).Flush()
		}
		if req.Messages[len(req.Messages)-1].Role != "tool" {
			args, _ := json.Marshal(cmp.Or(p.args, "{}"))
			chunk(`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"`+p.lampTool+`","arguments":`+string(args)+`}}]}`, "")
			chunk(`{}`, "tool_calls")
		} else {
			for _, piece := range []string{"好的，", "客厅的灯", "已经打开了。"} {
				b, _ := json.Marshal(map[string]string{"content": piece})
				chunk(string(b), "")
			}
			chunk(`{}`, "stop")
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	case "/v1/audio/speech":
		var req struct{ Input, Voice string }
		_ = json.NewDecoder(r.Body).Decode(&req)
		p.mu.Lock()
		p.spoken = append(p.spoken, req.Input)
		p.voices = append(p.voices, req.Voice)
		p.mu.Unlock()
		w.Header().Set("Content-Type", "audio/pcm")
		n := 24000 * max(p.seconds, 1) // seconds of a 300 Hz tone at 24 kHz
		b := make([]byte, 2*n)
		for i := range n {
			binary.LittleEndian.PutUint16(b[2*i:], uint16(int16(6000*math.Sin(2*math.Pi*300*float64(i)/24000))))
		}
		_, _ = w.Write(b)
	default:
		p.t.Errorf("unexpected %s %s", r.Method, r.URL.Path)
		http.NotFound(w, r)
	}
}

// talkingHub runs a hub whose speech and model providers are p.
func talkingHub(t *testing.T, p *providers, edit func(*server.Config)) *testHub {
	return startHub(t, "", func(c *server.Config) {
		base := p.srv.URL + "/v1"
		c.AgentProvider, c.AgentBaseURL, c.AgentAPIKey, c.AgentModel = "openai", base, "sk-test", "test-model"
		c.ASRProvider, c.ASRBaseURL, c.ASRAPIKey = "openai", base, "sk-test"
		c.TTSProvider, c.TTSBaseURL, c.TTSAPIKey = "openai", base, "sk-test"
		if edit != nil {
			edit(c)
		}
	})
}

// speech is 1.2 s of a voice-like tone as the firmware sends it: Opus,
// 16 kHz, 60 ms frames.
func speech(t *testing.T) [][]byte {
	enc, err := opus.NewEncoder(16000, 60)
	if err != nil {
		t.Fatal(err)
	}
	var frames [][]byte
	for n := range 20 {
		pcm := make([]int16, 960)
		for i := range pcm {
			x := float64(n*960+i) / 16000
			pcm[i] = int16(5000 * (math.Sin(2*math.Pi*180*x) + 0.5*math.Sin(2*math.Pi*360*x)))
		}
		pkt, err := enc.Encode(pcm)
		if err != nil {
			t.Fatal(err)
		}
		frames = append(frames, pkt)
	}
	return frames
}

// A person presses the button of a device and says "打开客厅的灯": the hub
// recognises it, the agent turns on the living-room lamp (another device),
// and the device hears the answer: stt, the face, tts start, the sentence,
// Opus audio that decodes to the synthesised length, paced no faster than
// real time beyond the lead, and tts stop.
func TestTalkOverWebSocket(t *testing.T) {
	const lampID, talkerID = "aa:00:00:00:7a:01", "aa:00:00:00:7a:02"
	p := newProviders(t, catalog.Name(lampID, "self.lamp.turn_on"))
	h := talkingHub(t, p, nil)
	lamp := h.device(sim.Config{DeviceID: lampID, Lamp: true})
	h.readyTools(lampID)
	_, _ = h.call("PATCH", "/api/devices/"+lampID, map[string]any{"name": "客厅的灯", "room": "客厅"})

	c := h.rawDevice(talkerID)
	// A person gives this device a voice of its own.
	if st, _ := h.call("PATCH", "/api/devices/"+talkerID, map[string]any{"name": "书房小智", "voice": "zf_xiaobei"}); st != 200 {
		t.Fatal(st)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	send(t, c, `{"session_id":"s","type":"listen","state":"start","mode":"manual"}`)
	for _, f := range speech(t) {
		if err := c.Write(ctx, websocket.MessageBinary, f); err != nil {
			t.Fatal(err)
		}
	}
	send(t, c, `{"session_id":"s","type":"listen","state":"stop"}`)

	dec, _ := opus.NewDecoder(24000)
	var texts []string
	var samples, frames int
	var first time.Time
	for {
		typ, data, err := c.Read(ctx)
		if err != nil {
			t.Fatalf("read: %v (so far %v)", err, texts)
		}
		if typ == websocket.MessageBinary {
			now := time.Now()
			if first.IsZero() {
				first = now
			}
			if early := first.Add(time.Duration(frames)*60*time.Millisecond - 400*time.Millisecond); now.Before(early) {
				t.Fatalf("audio frame %d arrived %v after the first: faster than real time beyond the lead", frames, now.Sub(first))
			}
			pcm, err := dec.Decode(data)
			if err != nil {
				t.Fatalf("downlink frame %d does not decode: %v", frames, err)
			}
			samples += len(pcm)
			frames++
			continue
		}
		texts = append(texts, string(data))
		if strings.Contains(string(data), `"state":"stop"`) {
			break
		}
	}
	got := strings.Join(texts, "\n")
	for _, want := range []string{`{"type":"stt","text":"打开客厅的灯"}`, `"emotion":"thinking"`, `{"type":"tts","state":"start"}`,
		`"state":"sentence_start","text":"` + answer + `"`, `{"type":"tts","state":"stop"}`} {
		if !strings.Contains(got, want) {
			t.Fatalf("the device did not receive %s; it got:\n%s", want, got)
		}
	}
	if !lamp.LampOn() {
		t.Fatal("the living-room lamp is still off")
	}
	// One second of synthesised speech: 16.7 frames of 60 ms, the last padded.
	if frames != 17 || samples != 17*1440 {
		t.Fatalf("received %d frames, %d samples; want 17 frames of 1440", frames, samples)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.heardMs < 1100 || p.heardMs > 1300 {
		t.Fatalf("the recognizer received %d ms of audio; the device sent 1200", p.heardMs)
	}
	if !strings.Contains(p.system, "speaking aloud to the device 书房小智") {
		t.Fatalf("the model was not told which device it speaks through:\n%s", p.system)
	}
	if strings.Join(p.spoken, "|") != answer || strings.Join(p.voices, "|") != "zf_xiaobei" {
		t.Fatalf("synthesised %q in voices %q", p.spoken, p.voices)
	}
	h.waitEvent(talkerID, "outcome:ok")
}

// The same conversation over MQTT+UDP: messages over MQTT, audio both ways
// over the encrypted UDP channel, and the device stays online afterwards.
func TestTalkOverMQTT(t *testing.T) {
	const lampID, talkerID = "aa:00:00:00:7a:11", "aa:00:00:00:7a:12"
	p := newProviders(t, catalog.Name(lampID, "self.lamp.turn_on"))
	h := talkingHub(t, p, func(c *server.Config) { c.MQTTListen, c.DeviceAuth = "127.0.0.1:0", "token" })
	lamp := h.device(sim.Config{DeviceID: lampID, ClientID: "uuid-lamp", Lamp: true, Token: tokenOf(otaCheck(t, h, lampID, "uuid-lamp"))})
	h.readyTools(lampID)
	d := connectMQTT(t, mqttLogin(t, otaCheck(t, h, talkerID, "uuid-talker")))
	dev := serveMCP(t, d)
	h.readyTools(talkerID)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ch, err := d.OpenAudio(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sid := d.SessionID()
	if err := d.Publish([]byte(`{"session_id":"` + sid + `","type":"listen","state":"start","mode":"manual"}`)); err != nil {
		t.Fatal(err)
	}
	// The firmware sends a frame every 60 ms after listen start; UDP and
	// MQTT are not ordered with each other, so frames sent all at once
	// can all arrive before the hub has read the listen start (and be
	// dropped as audio outside a turn). Pace them as the device does.
	tick := time.NewTicker(60 * time.Millisecond)
	defer tick.Stop()
	for _, f := range speech(t) {
		<-tick.C
		if err := ch.SendAudio(f, 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Publish([]byte(`{"session_id":"` + sid + `","type":"listen","state":"stop"}`)); err != nil {
		t.Fatal(err)
	}
	dec, _ := opus.NewDecoder(24000)
	var samples, frames int
	var stamps []uint32
	audio := make(chan mqttdevice.Frame, 64)
	go func() {
		for {
			f, err := ch.Recv(ctx)
			if err != nil {
				close(audio)
				return
			}
			audio <- f
		}
	}()
	var texts []string
	for done := false; !done; {
		select {
		case m := <-dev.other:
			if strings.Contains(m, `"type":"tts"`) || strings.Contains(m, `"type":"stt"`) {
				texts = append(texts, m)
			}
			done = strings.Contains(m, `"state":"stop"`)
		case <-ctx.Done():
			t.Fatalf("no tts stop; got %v", texts)
		}
	}
	// UDP and MQTT are not ordered with each other: audio may still be on
	// its way when tts stop arrives. Wait for the 17 frames the answer
	// makes (and take any extra already there, which the count refuses).
	for frames < 17 || len(audio) > 0 {
		var f mqttdevice.Frame
		select {
		case f = <-audio:
		case <-ctx.Done():
			res, _ := http.Get(h.URL() + "/metrics")
			body, _ := io.ReadAll(res.Body)
			var udp []string
			for _, l := range strings.Split(string(body), "\n") {
				if strings.HasPrefix(l, "xiaozhi_hub_udp") || strings.HasPrefix(l, "xiaozhi_hub_voice_turns") {
					udp = append(udp, l)
				}
			}
			t.Fatalf("%d of 17 audio frames over UDP; the device received %v; %s", frames, texts, strings.Join(udp, "; "))
		}
		pcm, err := dec.Decode(f.Opus)
		if err != nil {
			t.Fatal(err)
		}
		samples += len(pcm)
		frames++
		stamps = append(stamps, f.Timestamp)
	}
	checkPlayoutTimestamps(t, stamps)
	got := strings.Join(texts, "\n")
	if !strings.Contains(got, `{"type":"stt","text":"打开客厅的灯"}`) || !strings.Contains(got, answer) {
		t.Fatalf("the device received:\n%s", got)
	}
	if !lamp.LampOn() || frames != 17 || samples != 17*1440 {
		t.Fatalf("lamp on %v; %d frames, %d samples over UDP", lamp.LampOn(), frames, samples)
	}
	if _, got := h.call("GET", "/api/devices/"+talkerID, nil); got["online"] != true {
		t.Fatalf("the MQTT device after its conversation: %v", got)
	}
}

// The button during an answer (abort): the answer stops at once, with tts
// stop, and no audio follows it.
func TestAbortMidAnswer(t *testing.T) {
	const lampID, talkerID = "aa:00:00:00:7a:21", "aa:00:00:00:7a:22"
	p := newProviders(t, catalog.Name(lampID, "self.lamp.turn_on"))
	p.seconds = 20
	h := talkingHub(t, p, nil)
	h.device(sim.Config{DeviceID: lampID, Lamp: true})
	h.readyTools(lampID)
	c := h.rawDevice(talkerID)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	send(t, c, `{"session_id":"s","type":"listen","state":"start","mode":"manual"}`)
	for _, f := range speech(t) {
		if err := c.Write(ctx, websocket.MessageBinary, f); err != nil {
			t.Fatal(err)
		}
	}
	send(t, c, `{"session_id":"s","type":"listen","state":"stop"}`)
	frames, stopped := 0, false
	for {
		typ, data, err := c.Read(ctx)
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		if typ == websocket.MessageBinary {
			if stopped {
				t.Fatal("audio after tts stop")
			}
			frames++
			if frames == 10 {
				send(t, c, `{"session_id":"s","type":"abort"}`)
			}
			continue
		}
		if strings.Contains(string(data), `"state":"stop"`) {
			if frames >= 20*17 {
				t.Fatalf("tts stop only after all %d frames: the abort did not stop the answer", frames)
			}
			stopped = true
			break
		}
	}
	// Nothing more arrives: read briefly for stray audio.
	rctx, rcancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer rcancel()
	if typ, _, err := c.Read(rctx); err == nil && typ == websocket.MessageBinary {
		t.Fatal("audio after tts stop")
	}
	h.waitEvent(talkerID, "outcome:aborted")
}

// spokenFrames is real speech ("打开客厅的灯", made by testdata/speech/make.sh
// with espeak-ng) as the firmware sends it: Opus, 16 kHz, 60 ms frames,
// followed by a second of silence; and the speech's length in ms.
func spokenFrames(t *testing.T) ([][]byte, int) {
	f, err := os.Open("testdata/speech/open-lamp.wav")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pcm, rate, err := wav.Decode(f, 1<<22)
	if err != nil {
		t.Fatal(err)
	}
	// Resample to 16 kHz (linear: espeak's speech is band-limited).
	n := len(pcm) * 16000 / rate
	in16 := make([]int16, n)
	for i := range in16 {
		pos := float64(i) * float64(rate) / 16000
		j := int(pos)
		a, b := pcm[min(j, len(pcm)-1)], pcm[min(j+1, len(pcm)-1)]
		in16[i] = int16(float64(a) + (float64(b)-float64(a))*(pos-float64(j)))
	}
	in16 = append(in16, make([]int16, 16000)...)
	enc, _ := opus.NewEncoder(16000, 60)
	var frames [][]byte
	for i := 0; i+960 <= len(in16); i += 960 {
		pkt, err := enc.Encode(in16[i : i+960])
		if err != nil {
			t.Fatal(err)
		}
		frames = append(frames, pkt)
	}
	return frames, len(pcm) * 1000 / rate
}

// Auto mode with real speech: the device only says listen start and sends
// its microphone; the hub's VAD finds where the sentence ends, and the turn
// follows with no listen stop.
func TestTalkAutoModeRealSpeech(t *testing.T) {
	const lampID, talkerID = "aa:00:00:00:7a:31", "aa:00:00:00:7a:32"
	p := newProviders(t, catalog.Name(lampID, "self.lamp.turn_on"))
	h := talkingHub(t, p, nil)
	lamp := h.device(sim.Config{DeviceID: lampID, Lamp: true})
	h.readyTools(lampID)
	c := h.rawDevice(talkerID)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	frames, speechMs := spokenFrames(t)
	send(t, c, `{"session_id":"s","type":"listen","state":"start","mode":"auto"}`)
	for _, f := range frames {
		if err := c.Write(ctx, websocket.MessageBinary, f); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond) // the device's pace, compressed; the session drops frames it cannot take
	}
	var texts []string
	for {
		typ, data, err := c.Read(ctx)
		if err != nil {
			t.Fatalf("no answer to the spoken sentence: %v (got %v)", err, texts)
		}
		if typ == websocket.MessageText {
			texts = append(texts, string(data))
			if strings.Contains(string(data), `"state":"stop"`) {
				break
			}
		}
	}
	if !strings.Contains(strings.Join(texts, ""), `{"type":"stt","text":"打开客厅的灯"}`) || !lamp.LampOn() {
		t.Fatalf("the device received %v; lamp on %v", texts, lamp.LampOn())
	}
	p.mu.Lock()
	heard := p.heardMs
	p.mu.Unlock()
	t.Logf("speech %d ms; the recognizer got %d ms", speechMs, heard)
	// The utterance sent to recognition holds the speech (espeak's file has
	// a little silence at each end), and not the whole second of silence after it.
	if heard < speechMs*6/10 || heard > speechMs+900 {
		t.Fatalf("the recognizer got %d ms of audio for %d ms of speech", heard, speechMs)
	}
}

// checkPlayoutTimestamps asserts that the downlink frames of one answer
// carry their play-out times (docs/protocol.md §7.4): never 0 (firmware
// built with server echo cancellation ignores 0), each 60 ms (a frame)
// after the previous.
func checkPlayoutTimestamps(t *testing.T, stamps []uint32) {
	t.Helper()
	if len(stamps) == 0 || stamps[0] == 0 {
		t.Fatalf("downlink timestamps %v: the first is 0", stamps)
	}
	for i := 1; i < len(stamps); i++ {
		if stamps[i] != stamps[i-1]+60 {
			t.Fatalf("downlink frame %d has timestamp %d after %d, want 60 ms later (all: %v)", i, stamps[i], stamps[i-1], stamps)
		}
	}
}

// Over WebSocket with binary protocol v2 the downlink frames carry their
// play-out timestamps; v3 has no timestamp field (the firmware takes 0),
// and its frames are exact.
func TestDownlinkTimestampsOverWebSocket(t *testing.T) {
	const lampID = "aa:00:00:00:7a:41"
	p := newProviders(t, catalog.Name(lampID, "self.lamp.turn_on"))
	h := talkingHub(t, p, nil)
	h.device(sim.Config{DeviceID: lampID, Lamp: true})
	h.readyTools(lampID)
	for _, version := range []int{2, 3} {
		t.Run(fmt.Sprintf("v%d", version), func(t *testing.T) {
			c := h.rawDeviceHello(fmt.Sprintf("aa:00:00:00:7a:4%d", version), fmt.Sprintf(`{"type":"hello","version":%d,"features":{"mcp":true},"transport":"websocket","audio_params":{"format":"opus","sample_rate":16000,"channels":1,"frame_duration":60}}`, version))
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			send(t, c, `{"session_id":"s","type":"listen","state":"start","mode":"manual"}`)
			for _, f := range speech(t) {
				if err := c.Write(ctx, websocket.MessageBinary, protocol.AppendAudioFrame(nil, version, 0, f)); err != nil {
					t.Fatal(err)
				}
			}
			send(t, c, `{"session_id":"s","type":"listen","state":"stop"}`)
			dec, _ := opus.NewDecoder(24000)
			var stamps []uint32
			for {
				typ, data, err := c.Read(ctx)
				if err != nil {
					t.Fatalf("read: %v", err)
				}
				if typ == websocket.MessageText {
					if strings.Contains(string(data), `"state":"stop"`) {
						break
					}
					continue
				}
				f, err := protocol.ParseAudioFrame(version, data)
				if err != nil {
					t.Fatalf("downlink frame %d: %v", len(stamps), err)
				}
				if _, err := dec.Decode(f.Payload); err != nil {
					t.Fatalf("downlink frame %d does not decode: %v", len(stamps), err)
				}
				stamps = append(stamps, f.Timestamp)
			}
			if len(stamps) != 17 {
				t.Fatalf("%d frames, want 17", len(stamps))
			}
			if version == 2 {
				checkPlayoutTimestamps(t, stamps)
			}
		})
	}
}
