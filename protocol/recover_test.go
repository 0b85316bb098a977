package protocol

import (
	"testing"
	"unicode/utf8"
)

func TestRecoverReplyID(t *testing.T) {
	cases := []struct {
		frame   string
		id      int64
		payload string
		ok      bool
	}{
		// Firmware 2.4.2: the error message is not escaped (§12.25).
		{`{"session_id":"ab","type":"mcp","payload":{"jsonrpc":"2.0","id":9,"error":{"message":"Invalid mode: a"b"}}}`,
			9, `{"jsonrpc":"2.0","id":9,"error":{"message":"Invalid mode: a"b"}}`, true},
		// A backslash in a path is an invalid escape.
		{`{"session_id":"","type":"mcp","payload":{"jsonrpc":"2.0","id":12,"error":{"message":"no file C:\q"}}}`,
			12, `{"jsonrpc":"2.0","id":12,"error":{"message":"no file C:\q"}}`, true},
		// The id inside the message text, or in session_id, is not the id.
		{`{"session_id":"\"id\":5","type":"mcp","payload":{"jsonrpc":"2.0", "id" : 7,"error":{"message":"x "id":3 "}}}`,
			7, `{"jsonrpc":"2.0", "id" : 7,"error":{"message":"x "id":3 "}}`, true},
		// No payload object, no id, a string id: nothing to recover.
		{`{"type":"mcp","payload":"x"}`, 0, "", false},
		{`{"type":"mcp","payload":{"jsonrpc":"2.0","error":{"message":"a"b"}}}`, 0, "", false},
		{`{"type":"mcp","payload":{"jsonrpc":"2.0","id":"s","error":{"message":"a"b"}}}`, 0, "", false},
		{`{"type":"listen","state":"detect","text":"say "hi""}`, 0, "", false},
		{`not json`, 0, "", false},
		{``, 0, "", false},
	}
	for _, c := range cases {
		id, payload, ok := RecoverReplyID([]byte(c.frame))
		if id != c.id || ok != c.ok || string(payload) != c.payload {
			t.Errorf("RecoverReplyID(%s) = %d, %s, %v; want %d, %s, %v", c.frame, id, payload, ok, c.id, c.payload, c.ok)
		}
	}
}

func TestValidText(t *testing.T) {
	in := []byte("{\"type\":\"mcp\",\"payload\":{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"text\":\"bad \xff\xfe end\"}}}")
	out := ValidText(in)
	if !utf8.Valid(out) {
		t.Fatalf("not valid UTF-8: %q", out)
	}
	m, err := DecodeMessage(out)
	if err != nil {
		t.Fatal(err)
	}
	r, err := m.DecodePayload()
	if err != nil || string(r.Result) != "{\"text\":\"bad \uFFFD end\"}" {
		t.Fatalf("result %s, %v", r.Result, err)
	}
	ok := []byte(`{"a":"é"}`)
	if got := ValidText(ok); &got[0] != &ok[0] {
		t.Fatal("valid text must be returned as is")
	}
}
