package protocol

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/xiaozhi-hub/hub/internal/jsonscan"
)

// AudioParams describes an Opus stream.
type AudioParams struct {
	Format        string `json:"format"`
	SampleRate    int    `json:"sample_rate"`
	Channels      int    `json:"channels"`
	FrameDuration int    `json:"frame_duration"`
}

// ClientHello is the device's first text frame.
type ClientHello struct {
	// Version is the binary audio framing (1, 2 or 3); 0 when absent.
	Version int
	// Features as sent (nil when absent: firmware ≤ 1.6.2 sends none).
	Features json.RawMessage
	// MCP is features.mcp == true: the device runs an MCP server.
	MCP         bool
	Transport   string
	AudioParams *AudioParams
	// Language is the hello's "language" (a language tag such as "en-US":
	// the browser test device sends it; the firmware sends its language
	// at the OTA check instead), "" when absent or not a short tag.
	Language string
}

// languageTag returns s when it looks like a language tag ("zh", "en-US",
// "zh_CN"): at most 16 letters, digits, '-' or '_'; else "".
func languageTag(s string) string {
	if len(s) > 16 {
		return ""
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return ""
		}
	}
	return s
}

// DecodeClientHello reads a hello frame leniently: only the members the hub
// uses are checked, and a member of the wrong type is an error naming it.
func DecodeClientHello(raw []byte) (ClientHello, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return ClientHello{}, fmt.Errorf("%w: hello: %v", ErrMalformed, err)
	}
	var h ClientHello
	if v, ok := fields["version"]; ok && string(v) != "null" {
		var f float64
		if err := json.Unmarshal(v, &f); err != nil || f != float64(int(f)) {
			return h, fmt.Errorf("%w: hello \"version\" must be an integer, got %s", ErrMalformed, truncate(v, 40))
		}
		h.Version = int(f)
	}
	if v, ok := fields["transport"]; ok {
		_ = json.Unmarshal(v, &h.Transport)
	}
	if v, ok := fields["language"]; ok {
		var lang string
		_ = json.Unmarshal(v, &lang) // not a string: no language, as for transport
		h.Language = languageTag(lang)
	}
	if v, ok := fields["features"]; ok && string(v) != "null" {
		var feats map[string]json.RawMessage
		if err := json.Unmarshal(v, &feats); err != nil {
			return h, fmt.Errorf("%w: hello \"features\" must be an object, got %s", ErrMalformed, truncate(v, 40))
		}
		h.Features = v
		if m, ok := feats["mcp"]; ok {
			_ = json.Unmarshal(m, &h.MCP) // only a JSON true enables MCP
		}
	}
	if v, ok := fields["audio_params"]; ok && string(v) != "null" {
		var ap AudioParams
		if err := json.Unmarshal(v, &ap); err != nil {
			return h, fmt.Errorf("%w: hello \"audio_params\": %v", ErrMalformed, err)
		}
		h.AudioParams = &ap
	}
	return h, nil
}

// Hello decodes m, a "hello" message, as DecodeClientHello(m.Raw) does.
// When DecodeMessage has checked the frame, the hello's members are found by
// scanning it, not by decoding it a second time with encoding/json; anything
// unusual (an error to report, a key encoding/json would match differently)
// goes to DecodeClientHello, so results and errors are the same.
func (m Message) Hello() (ClientHello, error) {
	if m.valid {
		if h, ok := helloFast(m.Raw); ok {
			return h, nil
		}
	}
	return DecodeClientHello(m.Raw)
}

var (
	helloKeys   = []string{"version", "transport", "features", "audio_params", "language"}
	featureKeys = []string{"mcp"}
)

// helloFast is DecodeClientHello for a well-formed hello in raw, which is
// known to be valid JSON.
func helloFast(raw []byte) (ClientHello, bool) {
	var vals [5][]byte
	if !jsonscan.ValidMembers(raw, helloKeys, vals[:]) {
		return ClientHello{}, false
	}
	version, transport, features, audio := vals[0], vals[1], vals[2], vals[3]
	var h ClientHello
	if version != nil && string(version) != "null" {
		f, err := strconv.ParseFloat(string(version), 64)
		if err != nil || f != float64(int(f)) {
			return ClientHello{}, false // the general path says what is wrong
		}
		h.Version = int(f)
	}
	h.Transport, _ = jsonscan.String(transport) // not a string: "", as encoding/json leaves it
	if lang, ok := jsonscan.String(vals[4]); ok {
		h.Language = languageTag(lang)
	}
	if features != nil && string(features) != "null" {
		var mcp [1][]byte
		if !jsonscan.ValidMembers(features, featureKeys, mcp[:]) {
			return ClientHello{}, false
		}
		h.Features = bytes.Clone(features) // kept for the connection: not the frame's memory
		h.MCP = string(mcp[0]) == "true"
	}
	if audio != nil && string(audio) != "null" {
		var ap AudioParams
		if json.Unmarshal(audio, &ap) != nil {
			return ClientHello{}, false
		}
		h.AudioParams = &ap
	}
	return h, true
}

// ServerHello builds the hub's hello reply. The firmware needs "transport"
// to be the string "websocket" (2.4.2 crashes without it), stores session_id
// and echoes it, and decodes downlink audio with audio_params (defaulting to
// 24 kHz / 60 ms when they are absent), so all three are always sent.
func ServerHello(sessionID string, audio AudioParams) []byte {
	b, _ := json.Marshal(struct {
		Type        string      `json:"type"`
		Transport   string      `json:"transport"`
		SessionID   string      `json:"session_id"`
		AudioParams AudioParams `json:"audio_params"`
	}{TypeHello, "websocket", sessionID, audio})
	return b
}

// UDPParams is the server hello's "udp" object for a device on MQTT+UDP
// (docs/protocol.md): where to send audio and the AES-128-CTR key and
// nonce, both as hex.
type UDPParams struct {
	Server string `json:"server"`
	Port   int    `json:"port"`
	Key    string `json:"key"`
	Nonce  string `json:"nonce"`
}

// ServerHelloUDP builds the hello reply for a device whose audio travels
// over UDP: transport "udp" and the "udp" object, which the firmware
// requires (it ignores the hello without them).
func ServerHelloUDP(sessionID string, audio AudioParams, udp UDPParams) []byte {
	b, _ := json.Marshal(struct {
		Type        string      `json:"type"`
		Transport   string      `json:"transport"`
		SessionID   string      `json:"session_id"`
		AudioParams AudioParams `json:"audio_params"`
		UDP         UDPParams   `json:"udp"`
	}{TypeHello, "udp", sessionID, audio, udp})
	return b
}

// DefaultDownlinkAudio is what the hub announces: the firmware's own default.
var DefaultDownlinkAudio = AudioParams{Format: "opus", SampleRate: 24000, Channels: 1, FrameDuration: 60}
