package protocol

import "testing"

// The fast decoders exist so that the frames every device sends cost no
// reflection and few allocations; these pin the counts they have today
// (a regression shows here before it shows in a benchmark).
func TestFastDecodersAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	frame := []byte(`{"session_id":"0123456789abcdef","type":"mcp","payload":{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"true"}],"isError":false}}}`)
	listen := []byte(`{"session_id":"0123456789abcdef","type":"listen","state":"start","mode":"auto"}`)
	notification := []byte(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`)
	m, err := DecodeMessage(frame)
	if err != nil || !m.valid {
		t.Fatalf("the common reply took the slow path (%v)", err)
	}
	r, err := m.DecodePayload()
	if err != nil || !r.valid {
		t.Fatalf("its payload took the slow path (%v)", err)
	}
	hello, err := DecodeMessage([]byte(hellos[0]))
	if err != nil {
		t.Fatal(err)
	}
	keys := []string{"content", "isError"}
	vals := make([][]byte, len(keys))
	for _, c := range []struct {
		name string
		max  float64
		f    func()
	}{
		// The session id is the one string the envelope copies.
		{"DecodeMessage mcp reply", 1, func() { DecodeMessage(frame) }},
		{"DecodeMessage listen", 1, func() { DecodeMessage(listen) }},
		{"DecodePayload", 0, func() { m.DecodePayload() }},
		{"DecodeRPC notification", 1, func() { DecodeRPC(notification) }},
		{"ResultMembers", 0, func() { r.ResultMembers(keys, vals) }},
		// Once per connection; DecodeClientHello takes 52.
		{"Hello", 8, func() { hello.Hello() }},
	} {
		if n := testing.AllocsPerRun(100, c.f); n > c.max {
			t.Errorf("%s: %.0f allocations, want at most %.0f", c.name, n, c.max)
		}
	}
}
