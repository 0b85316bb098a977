package protocol

import (
	"bytes"
	"fmt"
	"reflect"
	"testing"

	"github.com/xiaozhi-hub/hub/internal/jsonscan"
)

// sameResult decodes in with decode (fast path first) and with slow
// (encoding/json alone) and checks that they agree.
func sameResult[T any](t *testing.T, in []byte, decode, decodeJSON func([]byte) (T, error)) {
	t.Helper()
	fast, fe := decode(in)
	slow, se := decodeJSON(in)
	if fmt.Sprint(fe) != fmt.Sprint(se) {
		t.Fatalf("%q: error %v, encoding/json says %v", in, fe, se)
	}
	if !equalish(fast, slow) {
		t.Fatalf("%q:\nfast %+v\nslow %+v", in, fast, slow)
	}
}

// equalish compares results, ignoring whether the fast path marked them
// as validated.
func equalish(a, b any) bool {
	switch x := a.(type) {
	case Message:
		y := b.(Message)
		x.valid, y.valid = false, false
		return reflect.DeepEqual(x, y)
	case RPC:
		y := b.(RPC)
		x.valid, y.valid = false, false
		return reflect.DeepEqual(x, y)
	}
	return reflect.DeepEqual(a, b)
}

var envelopes = []string{
	`{"session_id":"abc","type":"mcp","payload":{"jsonrpc":"2.0","id":1,"result":{}}}`,
	`{"type":"listen","state":"start","mode":"auto","session_id":""}`,
	`{"type":"abort"}`,
	`{"type":"abort","session_id":7}`,
	`{"type":"abort","session_id":null}`,
	`{"type":"abort","session_id":"a\"b"}`,
	`{"type":"hello"`,
	`{"session_id":"x"}`,
	`{"type":5}`,
	`{"type":null}`,
	`{"type":"mcp","payload":null}`,
	" \n{\"type\":\"iot\"}\t",
	`{ "type" : "mcp" , "payload" : [1,2,{"a":"}"}] }`,
	`{"TYPE":"mcp"}`,
	`{"Type":"mcp","type":"iot"}`,
	`{"type":"mcp","type":"iot"}`,
	`{"typ\u0065":"mcp"}`,
	`{"type":"m\u0063p"}`,
	`{"type":"语音","payload":{"x":"é"}}`,
	`{"type":"mcp","payload":"str"}`,
	`{"type":"mcp","payload":12.5e3}`,
	`{"type":"mcp","payload":true,"extra":{"nested":[{"deep":["}"]}]}}`,
	`{"type":"mcp"} trailing`,
	`{"type":"mcp",}`,
	`{}`,
	"{\"type\":\"a\xffb\"}",
	`{"ſession_id":"x","type":"a"}`,
}

func TestDecodeMessageFastMatchesEncodingJSON(t *testing.T) {
	for _, in := range envelopes {
		sameResult(t, []byte(in), DecodeMessage, decodeMessageJSON)
	}
}

var payloads = []string{
	`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"true"}],"isError":false}}`,
	`{"jsonrpc":"2.0","id":7,"error":{"message":"Unknown tool"}}`,
	`{"jsonrpc":"2.0","id":7,"error":null,"result":{}}`,
	`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`,
	`{"jsonrpc":"2.0","method":"notifications/x","params":null}`,
	`{"jsonrpc":"2.0","id":"s","method":"ping","params":{"a":1}}`,
	`{"jsonrpc":"2.0","id":null,"result":{}}`,
	`{"jsonrpc":"2.0","id":3}`,
	`{"jsonrpc":"2.0","id":3,"result":null}`,
	`{"jsonrpc":"2.0"}`,
	`{"jsonrpc":"2.0","method":5}`,
	`{"jsonrpc":"2.0","method":null,"id":1,"result":1}`,
	`{"jsonrpc":"2.0","Method":"x"}`,
	`{"jsonrpc":"2.0","id":1.0,"result":"x"}`,
	`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a\\b","description":"\u4f60"}],"nextCursor":"b"}}`,
	`{"id":1,"result":[]`,
	`{"id":1,"result":[],"id":2}`,
}

func TestDecodeRPCFastMatchesEncodingJSON(t *testing.T) {
	for _, in := range payloads {
		sameResult(t, []byte(in), DecodeRPC, decodeRPCJSON)
	}
}

func TestFastPathsAreUsed(t *testing.T) {
	in := []byte(`{"session_id":"abc","type":"mcp","payload":{"jsonrpc":"2.0","id":1,"result":{}}}`)
	m, ok := decodeMessageFast(in)
	if !ok || m.Type != "mcp" || m.SessionID != "abc" || string(m.Payload) != `{"jsonrpc":"2.0","id":1,"result":{}}` {
		t.Fatalf("envelope: %+v %v", m, ok)
	}
	r, ok := decodeRPCFast(m.Payload)
	if !ok || string(r.ID) != "1" || string(r.Result) != "{}" {
		t.Fatalf("rpc: %+v %v", r, ok)
	}
}

func FuzzDecodeMessage(f *testing.F) {
	for _, s := range envelopes {
		f.Add([]byte(s))
	}
	for _, s := range payloads {
		f.Add([]byte(`{"type":"mcp","payload":` + s + `}`))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		sameResult(t, in, DecodeMessage, decodeMessageJSON)
		m, err := DecodeMessage(in)
		if err == nil && m.Payload != nil && bytes.HasPrefix(bytes.TrimSpace(m.Payload), []byte("{")) {
			sameResult(t, m.Payload, DecodeRPC, decodeRPCJSON)
			samePayload(t, m)
		}
	})
}

func FuzzDecodeRPC(f *testing.F) {
	for _, s := range payloads {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		sameResult(t, in, DecodeRPC, decodeRPCJSON)
	})
}

func TestEnvelopePrefix(t *testing.T) {
	for _, sid := range []string{"0123456789abcdef0123456789abcdef", "", `a"b`} {
		p := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
		want := EncodeEnvelope(sid, p)
		if got := AppendEnvelope(nil, EnvelopePrefix(sid), p); !bytes.Equal(got, want) {
			t.Errorf("%q: %s, want %s", sid, got, want)
		}
	}
}

// samePayload checks that m.DecodePayload, which trusts a checked frame,
// answers as encoding/json does, and that ResultMembers agrees with
// ObjectMembers on the result.
func samePayload(t *testing.T, m Message) {
	t.Helper()
	got, err := m.DecodePayload()
	want, werr := decodeRPCJSON(m.Payload)
	if fmt.Sprint(err) != fmt.Sprint(werr) || !equalish(got, want) {
		t.Fatalf("%q: DecodePayload %+v %v, encoding/json %+v %v", m.Raw, got, err, want, werr)
	}
	if err != nil || got.Result == nil {
		return
	}
	keys := []string{"content", "isError", "tools", "nextCursor"}
	a, b := make([][]byte, 4), make([][]byte, 4)
	okA, okB := got.ResultMembers(keys, a), jsonscan.ObjectMembers(got.Result, keys, b)
	if okA != okB || fmt.Sprint(a) != fmt.Sprint(b) {
		t.Fatalf("%q: ResultMembers %v %q, ObjectMembers %v %q", got.Result, okA, a, okB, b)
	}
}

func TestDecodePayloadMatches(t *testing.T) {
	for _, p := range payloads {
		in := []byte(`{"type":"mcp","payload":` + p + `}`)
		m, err := DecodeMessage(in)
		if err != nil || m.Payload == nil {
			continue
		}
		samePayload(t, m)
	}
	m, _ := DecodeMessage([]byte(`{"type":"mcp","payload":{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}}`))
	if r, err := m.DecodePayload(); err != nil || !r.valid {
		t.Errorf("the common reply was not decoded as checked: %+v %v", r, err)
	}
}
