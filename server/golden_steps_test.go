package server_test

// The golden conversations' hub settings and the steps beyond text
// messages: the OTA check, audio, the API (see golden_test.go for the
// script language; golden_mqtt_test.go for the raw MQTT and UDP device).

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/xiaozhi-hub/hub/catalog"
	"github.com/xiaozhi-hub/hub/opus"
	"github.com/xiaozhi-hub/hub/server"
	"github.com/xiaozhi-hub/hub/server/servertest"
)

// goldenHub starts the hub that section "config" describes.
func goldenHub(t *testing.T, config []byte) *testHub {
	t.Helper()
	var mqtt bool
	var voiceDevice, voiceTool string
	seconds := 1
	var timeout time.Duration
	var asrAudio string
	for line := range strings.Lines(string(config)) {
		f := strings.Fields(line)
		var err error
		switch {
		case len(f) == 0 || strings.HasPrefix(f[0], "#"):
		case f[0] == "mqtt" && len(f) == 1:
			mqtt = true
		case f[0] == "voice" && len(f) == 3:
			voiceDevice, voiceTool = f[1], f[2]
		case f[0] == "speech-seconds" && len(f) == 2:
			seconds, err = strconv.Atoi(f[1])
		case f[0] == "asr-audio" && len(f) == 2:
			asrAudio = f[1]
		case f[0] == "conversation-timeout" && len(f) == 2:
			timeout, err = time.ParseDuration(f[1])
		default:
			err = errors.New("unknown setting")
		}
		if err != nil {
			t.Fatalf("config: %s: %v", strings.TrimSpace(line), err)
		}
	}
	edit := func(c *server.Config) {
		if mqtt {
			c.MQTTListen, c.DeviceAuth = "127.0.0.1:0", "token"
		}
		if timeout > 0 {
			c.ConversationTimeout = timeout
		}
		c.ASRAudio = asrAudio
	}
	if voiceDevice == "" {
		return startHub(t, "", edit)
	}
	p := newProviders(t, catalog.Name(voiceDevice, voiceTool))
	p.seconds = seconds
	return talkingHub(t, p, edit)
}

// parseHeaders reads "Name: value" lines up to a blank line, and returns
// them and what follows.
func parseHeaders(data []byte) (http.Header, []byte) {
	header := http.Header{}
	r := bufio.NewReader(bytes.NewReader(data))
	for {
		line, err := r.ReadString('\n')
		if strings.TrimSpace(line) == "" {
			rest, _ := io.ReadAll(r)
			return header, rest
		}
		if name, value, ok := strings.Cut(line, ":"); ok {
			header.Set(strings.TrimSpace(name), strings.TrimSpace(value))
		}
		if err != nil {
			return header, nil
		}
	}
}

// otaMQTT is the OTA answer's `mqtt` object (docs/protocol.md §2.2).
type otaMQTT struct {
	Endpoint     string `json:"endpoint"`
	ClientID     string `json:"client_id"`
	Username     string `json:"username"`
	Password     string `json:"password"`
	PublishTopic string `json:"publish_topic"`
	Keepalive    int    `json:"keepalive"`
}

var otaTimestamp = regexp.MustCompile(`"timestamp":\d+`)

// ota makes the OTA check of section "ota" and records the answer as the
// hub wrote it.
func (cv *conversation) ota() error {
	header, body := parseHeaders(cv.ar.section("ota"))
	req, err := http.NewRequestWithContext(cv.ctx, "POST", cv.h.OTAURL(), bytes.NewReader(bytes.TrimSpace(body)))
	if err != nil {
		return err
	}
	for name, values := range header {
		req.Header[name] = values
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		return err
	}
	var ans struct {
		MQTT      *otaMQTT `json:"mqtt"`
		WebSocket struct {
			Token string `json:"token"`
		} `json:"websocket"`
	}
	if err := json.Unmarshal(data, &ans); err != nil {
		return fmt.Errorf("OTA answer %d %s: %w", res.StatusCode, data, err)
	}
	if ans.WebSocket.Token != "" {
		cv.names[ans.WebSocket.Token] = "<token>"
	}
	if ans.MQTT != nil {
		cv.login = *ans.MQTT
		cv.names[ans.MQTT.Endpoint] = "127.0.0.1:<mqtt-port>"
		cv.names[ans.MQTT.Password] = "<token>"
	}
	data = otaTimestamp.ReplaceAll(data, []byte(`"timestamp":<ms>`))
	fmt.Fprintf(&cv.out, "ota -> %d %s\n", res.StatusCode, cv.normalize(bytes.TrimSpace(data)))
	return nil
}

// sendAudio sends speech, over the device's transport.
func (cv *conversation) sendAudio() error {
	frames := speech(cv.t)
	if cv.mq == nil {
		if cv.c == nil {
			return errors.New("the device is not connected")
		}
		for _, f := range frames {
			if err := cv.c.Write(cv.ctx, websocket.MessageBinary, f); err != nil {
				return err
			}
		}
		return nil
	}
	if cv.udp == nil {
		return errors.New("no audio channel: the hub's hello over MQTT opens it")
	}
	// UDP and MQTT are not ordered with each other: a listen stop sent
	// next would overtake the audio. Wait until the hub took it all.
	const accepted = `xiaozhi_hub_udp_datagrams_total{outcome="accepted"}`
	before := cv.h.metric(cv.t, accepted)
	for _, f := range frames {
		if err := cv.udp.send(f); err != nil {
			return err
		}
	}
	waitFor(cv.t, "the hub to take the audio sent over UDP", func() bool {
		return cv.h.metric(cv.t, accepted) >= before+float64(len(frames))
	})
	return nil
}

// recvAudio takes the audio frames of an answer: "N" or "*".
func (cv *conversation) recvAudio(arg string) error {
	n, err := strconv.Atoi(arg)
	if arg != "*" && (err != nil || n <= 0) {
		return fmt.Errorf("want recv audio N or recv audio *")
	}
	rctx, cancel := context.WithTimeout(cv.ctx, 10*time.Second)
	defer cancel()
	if cv.mq != nil {
		if cv.udp == nil || arg == "*" {
			return errors.New("over UDP: recv audio N, with an audio channel open")
		}
		frames, err := cv.udp.take(rctx, n)
		if err != nil {
			return err
		}
		fmt.Fprintf(&cv.out, "recv audio %d datagrams: %s\n", len(frames), cv.describeUDP(frames))
		return nil
	}
	if cv.c == nil {
		return errors.New("the device is not connected")
	}
	var packets [][]byte
	for arg == "*" || len(packets) < n {
		typ, data, err := cv.c.Read(rctx)
		if err != nil {
			return fmt.Errorf("%d audio frames, then: %w", len(packets), err)
		}
		if typ == websocket.MessageText {
			if arg == "*" {
				cv.held = data
				break
			}
			return fmt.Errorf("a text frame after %d audio frames: %s", len(packets), data)
		}
		packets = append(packets, data)
	}
	if arg == "*" {
		fmt.Fprintf(&cv.out, "recv audio *: the frames already on their way\n")
		return nil
	}
	fmt.Fprintf(&cv.out, "recv audio %d frames: %s\n", len(packets), cv.audio.describe(packets))
	return nil
}

// audioShape is the downlink audio of the server hello's audio_params.
type audioShape struct{ rate, ms int }

// describe says what the Opus packets of one answer decode to (one
// decoder for the answer, as the firmware resets it at tts start only).
func (a audioShape) describe(packets [][]byte) string {
	dec, err := opus.NewDecoder(a.rate)
	if err != nil {
		return err.Error()
	}
	want := a.rate * a.ms / 1000
	var odd []string
	for i, p := range packets {
		pcm, err := dec.Decode(p)
		switch {
		case err != nil:
			odd = append(odd, fmt.Sprintf("frame %d: %v", i+1, err))
		case len(pcm) != want:
			odd = append(odd, fmt.Sprintf("frame %d: %d samples", i+1, len(pcm)))
		}
	}
	if len(odd) > 0 {
		return strings.Join(odd, "; ")
	}
	return fmt.Sprintf("Opus, each %d ms at %d Hz", a.ms, a.rate)
}

// api makes a request with the admin token and returns "<status> <body>",
// the body re-encoded with sorted keys and with times and durations
// replaced. It touches nothing of cv but ctx and h, so it may run on any
// goroutine.
func (cv *conversation) api(method, path, body string) string {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(cv.ctx, method, cv.h.URL()+path, rd)
	if err != nil {
		return "request: " + err.Error()
	}
	req.Header.Set("Authorization", "Bearer "+servertest.Token)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return "request: " + err.Error()
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	var v any
	if json.Unmarshal(data, &v) == nil {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(stable(v))
		data = bytes.TrimRight(b.Bytes(), "\n")
	}
	return strconv.Itoa(res.StatusCode) + " " + string(data)
}

// stable replaces values that change from run to run: times and durations.
func stable(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			lk := strings.ToLower(k)
			switch {
			case strings.HasSuffix(lk, "at") || lk == "lastseen" || lk == "time" || lk == "since":
				if _, ok := x.(string); ok {
					v[k] = "<time>"
					continue
				}
			case strings.HasSuffix(lk, "ms") || strings.Contains(lk, "duration"):
				if _, ok := x.(float64); ok {
					v[k] = "<duration>"
					continue
				}
			}
			v[k] = stable(x)
		}
	case []any:
		for i, x := range v {
			v[i] = stable(x)
		}
	case string:
		if _, err := time.Parse(time.RFC3339Nano, v); err == nil {
			return "<time>"
		}
	}
	return v
}
