package protocol

import (
	"bytes"
	"fmt"
	"reflect"
	"testing"
)

// decodeBoth decodes in with and without the fast paths.
func decodeBoth[T any](in []byte, decode func([]byte) (T, error)) (fast, slow T, fastErr, slowErr error) {
	fast, fastErr = decode(in)
	fastPaths = false
	defer func() { fastPaths = true }()
	slow, slowErr = decode(in)
	return
}

func sameResult[T any](t *testing.T, in []byte, decode func([]byte) (T, error)) {
	t.Helper()
	fast, slow, fe, se := decodeBoth(in, decode)
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
		sameResult(t, []byte(in), DecodeMessage)
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
		sameResult(t, []byte(in), DecodeRPC)
	}
}

func TestFastPathsAreUsed(t *testing.T) {
	in := []byte(`{"session_id":"abc","type":"mcp","payload":{"jsonrpc":"2.0","id":1,"result":{}}}`)
	m, ok := decodeMessageFast(in, in)
	if !ok || m.Type != "mcp" || m.SessionID != "abc" || string(m.Payload) != `{"jsonrpc":"2.0","id":1,"result":{}}` {
		t.Fatalf("envelope: %+v %v", m, ok)
	}
	r, ok := decodeRPCFast(m.Payload)
	if !ok || string(r.ID) != "1" || string(r.Result) != "{}" {
		t.Fatalf("rpc: %+v %v", r, ok)
	}
}

func TestObjectMembers(t *testing.T) {
	keys := []string{"content", "isError"}
	vals := make([][]byte, 2)
	if !ObjectMembers([]byte(` {"isError":true, "content":[{"type":"text","text":"x"}]} `), keys, vals) {
		t.Fatal("not found")
	}
	if string(vals[0]) != `[{"type":"text","text":"x"}]` || string(vals[1]) != "true" {
		t.Fatalf("vals %q", vals)
	}
	for _, bad := range []string{`[1]`, `{"isError":true`, `{"IsError":true}`, ``, `"s"`} {
		if ObjectMembers([]byte(bad), keys, make([][]byte, 2)) {
			t.Errorf("%q accepted", bad)
		}
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
		sameResult(t, in, DecodeMessage)
		m, err := DecodeMessage(in)
		if err == nil && m.Payload != nil && bytes.HasPrefix(bytes.TrimSpace(m.Payload), []byte("{")) {
			sameResult(t, m.Payload, DecodeRPC)
			samePayload(t, m)
		}
	})
}

func FuzzDecodeRPC(f *testing.F) {
	for _, s := range payloads {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		sameResult(t, in, DecodeRPC)
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

func TestArrayElementsAndString(t *testing.T) {
	var got []string
	ok := ArrayElements([]byte(` [ {"a":"]"} , 1,"x\"y",[2,[3]] ,null] `), func(e []byte) bool {
		got = append(got, string(e))
		return true
	})
	want := []string{`{"a":"]"}`, `1`, `"x\"y"`, `[2,[3]]`, `null`}
	if !ok || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("%v %q", ok, got)
	}
	for _, bad := range []string{`{}`, `[1,`, ``} {
		if ArrayElements([]byte(bad), func([]byte) bool { t.Error("called"); return true }) {
			t.Errorf("%q accepted", bad)
		}
	}
	n := 0
	ArrayElements([]byte(`[1,2,3]`), func([]byte) bool { n++; return n < 2 })
	if n != 2 {
		t.Errorf("did not stop: %d", n)
	}
	for in, want := range map[string]string{`"plain"`: "plain", `"a\nb\u00e9"`: "a\nbé", `"é"`: "é"} {
		if s, ok := String([]byte(in)); !ok || s != want {
			t.Errorf("String(%s) = %q %v", in, s, ok)
		}
	}
	for _, bad := range []string{`1`, `null`, `"x`, ``} {
		if _, ok := String([]byte(bad)); ok {
			t.Errorf("String(%s) accepted", bad)
		}
	}
}

// samePayload checks that m.DecodePayload, which trusts a checked frame,
// answers as encoding/json does, and that ResultMembers agrees with
// ObjectMembers on the result.
func samePayload(t *testing.T, m Message) {
	t.Helper()
	got, err := m.DecodePayload()
	fastPaths = false
	want, werr := DecodeRPC(m.Payload)
	fastPaths = true
	if fmt.Sprint(err) != fmt.Sprint(werr) || !equalish(got, want) {
		t.Fatalf("%q: DecodePayload %+v %v, encoding/json %+v %v", m.Raw, got, err, want, werr)
	}
	if err != nil || got.Result == nil {
		return
	}
	keys := []string{"content", "isError", "tools", "nextCursor"}
	a, b := make([][]byte, 4), make([][]byte, 4)
	okA, okB := got.ResultMembers(keys, a), ObjectMembers(got.Result, keys, b)
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
