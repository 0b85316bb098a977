package protocol_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"github.com/xiaozhi-hub/hub/protocol"
)

func TestDecodeMessage(t *testing.T) {
	tests := map[string]struct {
		in      string
		typ     string
		payload string
		bad     bool
	}{
		"mcp envelope":       {in: `{"session_id":"abc","type":"mcp","payload":{"jsonrpc":"2.0","id":1,"result":{}}}`, typ: "mcp", payload: `{"jsonrpc":"2.0","id":1,"result":{}}`},
		"listen":             {in: `{"session_id":"","type":"listen","state":"start","mode":"auto"}`, typ: "listen"},
		"session id absent":  {in: `{"type":"abort"}`, typ: "abort"},
		"session id wrong":   {in: `{"type":"abort","session_id":7}`, typ: "abort"},
		"invalid json":       {in: `{"type":"hello"`, bad: true},
		"not an object":      {in: `["hello"]`, bad: true},
		"empty":              {in: ``, bad: true},
		"type missing":       {in: `{"session_id":"x"}`, bad: true},
		"type not a string":  {in: `{"type":5}`, bad: true},
		"null payload":       {in: `{"type":"mcp","payload":null}`, typ: "mcp"},
		"leading whitespace": {in: " \n{\"type\":\"iot\"}", typ: "iot"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			m, err := protocol.DecodeMessage([]byte(tc.in))
			if tc.bad {
				if !errors.Is(err, protocol.ErrMalformed) {
					t.Fatalf("want ErrMalformed, got %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if m.Type != tc.typ || string(m.Payload) != tc.payload {
				t.Fatalf("got type %q payload %q", m.Type, m.Payload)
			}
		})
	}
}

func TestServerHelloHasWhatFirmwareNeeds(t *testing.T) {
	var h map[string]any
	if err := json.Unmarshal(protocol.ServerHello("s1", protocol.DefaultDownlinkAudio), &h); err != nil {
		t.Fatal(err)
	}
	if h["type"] != "hello" || h["transport"] != "websocket" || h["session_id"] != "s1" {
		t.Fatalf("hello = %v", h)
	}
	ap, _ := h["audio_params"].(map[string]any)
	if ap["sample_rate"] != float64(24000) || ap["frame_duration"] != float64(60) || ap["format"] != "opus" {
		t.Fatalf("audio_params = %v", ap)
	}
}

func TestDecodeClientHello(t *testing.T) {
	h, err := protocol.DecodeClientHello([]byte(`{"type":"hello","version":3,"features":{"aec":true,"mcp":true,"glyph_push":true},"text_font":{"bundle":"noto-v1"},"transport":"websocket","audio_params":{"format":"opus","sample_rate":16000,"channels":1,"frame_duration":60}}`))
	if err != nil || !h.MCP || h.Version != 3 || h.AudioParams.SampleRate != 16000 {
		t.Fatalf("2.4 hello: %+v %v", h, err)
	}
	h, err = protocol.DecodeClientHello([]byte(`{"type":"hello","version": 1,"transport":"websocket","audio_params":{"format":"opus","sample_rate":16000,"channels":1,"frame_duration":60}}`))
	if err != nil || h.MCP || h.Features != nil {
		t.Fatalf("1.6 hello without features: %+v %v", h, err)
	}
	if _, err := protocol.DecodeClientHello([]byte(`{"type":"hello","features":{"mcp":"true"}}`)); err != nil {
		t.Fatalf("string mcp must just mean no MCP, got %v", err)
	}
	for _, bad := range []string{`{"type":"hello","version":"1"}`, `{"type":"hello","features":[1]}`, `{"type":"hello","version":1.5}`} {
		if _, err := protocol.DecodeClientHello([]byte(bad)); !errors.Is(err, protocol.ErrMalformed) {
			t.Errorf("%s: want ErrMalformed, got %v", bad, err)
		}
	}
}

func TestDecodeRPC(t *testing.T) {
	m, err := protocol.DecodeRPC([]byte(`{"jsonrpc":"2.0","id":3,"error":{"message":"Unknown tool: self.foo"}}`))
	if err != nil || !m.IsResponse() || m.Error == nil || m.Error.HasCode || m.Error.Message != "Unknown tool: self.foo" {
		t.Fatalf("firmware error form: %+v %v", m, err)
	}
	m, err = protocol.DecodeRPC([]byte(`{"jsonrpc":"2.0","id":4,"error":{"code":-32601,"message":"nope"}}`))
	if err != nil || !m.Error.HasCode || m.Error.Code != -32601 {
		t.Fatalf("standard error form: %+v %v", m, err)
	}
	if id, ok := m.IntID(); !ok || id != 4 {
		t.Fatalf("id = %d %v", id, ok)
	}
	m, err = protocol.DecodeRPC([]byte(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`))
	if err != nil || !m.IsNotification() {
		t.Fatalf("notification: %+v %v", m, err)
	}
	m, _ = protocol.DecodeRPC([]byte(`{"jsonrpc":"2.0","id":"7","result":{}}`))
	if _, ok := m.IntID(); ok {
		t.Fatal("a string id must not match a numeric request")
	}
	for _, bad := range []string{`{"jsonrpc":"2.0"}`, `{"id":1}`, `[]`, `{"id":1,"method":5}`} {
		if _, err := protocol.DecodeRPC([]byte(bad)); !errors.Is(err, protocol.ErrMalformed) {
			t.Errorf("%s: want ErrMalformed, got %v", bad, err)
		}
	}
}

func TestAudioFrames(t *testing.T) {
	opus := []byte{1, 2, 3, 4, 5}
	for v := 1; v <= 3; v++ {
		frame := protocol.AppendAudioFrame(nil, v, 77, opus)
		got, err := protocol.ParseAudioFrame(v, frame)
		if err != nil || !bytes.Equal(got.Payload, opus) {
			t.Fatalf("v%d round trip: %v %v", v, got, err)
		}
		if v == 2 && got.Timestamp != 77 {
			t.Fatalf("v2 timestamp = %d", got.Timestamp)
		}
	}
	v2 := protocol.AppendAudioFrame(nil, 2, 0, opus)
	if _, err := protocol.ParseAudioFrame(2, v2[:len(v2)-1]); !errors.Is(err, protocol.ErrMalformed) {
		t.Fatal("a v2 frame with a wrong payload_size must be rejected")
	}
	if _, err := protocol.ParseAudioFrame(3, []byte{0, 0}); !errors.Is(err, protocol.ErrMalformed) {
		t.Fatal("a short v3 frame must be rejected")
	}
	if f, err := protocol.ParseAudioFrame(1, []byte{0xF8}); err != nil || len(f.Payload) != 1 {
		t.Fatal("a 1-byte DTX packet is valid v1 audio")
	}
}

func TestDecodeIoT(t *testing.T) {
	m, err := protocol.DecodeIoT([]byte(`{"session_id":"","type":"iot","update":true,"descriptors":[{"name":"Speaker","description":"扬声器","properties":{"volume":{"description":"当前音量值","type":"number"}},"methods":{"SetVolume":{"description":"设置音量","parameters":{"volume":{"description":"0到100之间的整数","type":"number"}}}}}]}`))
	if err != nil || !m.Update || len(m.Descriptors) != 1 || m.Descriptors[0].Methods["SetVolume"].Parameters["volume"].Type != "number" {
		t.Fatalf("%+v %v", m, err)
	}
	m, err = protocol.DecodeIoT([]byte(`{"type":"iot","states":[{"name":"Lamp","state":{"power":false}}]}`))
	if err != nil || string(m.States[0].State["power"]) != "false" {
		t.Fatalf("%+v %v", m, err)
	}
	for _, bad := range []string{`{"type":"iot"}`, `{"type":"iot","states":[{"state":{}}]}`, `{"type":"iot","descriptors":"x"}`} {
		if _, err := protocol.DecodeIoT([]byte(bad)); !errors.Is(err, protocol.ErrMalformed) {
			t.Errorf("%s: want ErrMalformed, got %v", bad, err)
		}
	}
}

// FuzzDecode feeds arbitrary frames through every decoder a device frame can
// reach: none may panic, and every failure must be ErrMalformed.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"session_id":"a","type":"mcp","payload":{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}}`,
		`{"type":"mcp","payload":{"jsonrpc":"2.0","id":2,"error":{"message":"x"}}}`,
		`{"type":"hello","version":2,"features":{"mcp":true},"audio_params":{"sample_rate":16000}}`,
		`{"type":"iot","descriptors":[{"name":"Lamp","methods":{"TurnOn":{}}}],"states":[{"name":"Lamp","state":{"power":true}}]}`,
		`{"type":"listen","state":"detect","text":"你好小智"}`, `{}`, `[]`, `"x"`, `{"type":null}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		check := func(err error) {
			if err != nil && !errors.Is(err, protocol.ErrMalformed) {
				t.Fatalf("error not wrapping ErrMalformed: %v", err)
			}
		}
		m, err := protocol.DecodeMessage(data)
		check(err)
		if err == nil && m.Payload != nil {
			rpc, err := protocol.DecodeRPC(m.Payload)
			check(err)
			if err == nil {
				rpc.IntID()
			}
		}
		_, err = protocol.DecodeClientHello(data)
		check(err)
		_, err = protocol.DecodeIoT(data)
		check(err)
		for v := 1; v <= 3; v++ {
			_, err := protocol.ParseAudioFrame(v, data)
			check(err)
		}
	})
}
