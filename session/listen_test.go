package session

import (
	"encoding/json"
	"testing"
)

// decodeListen agrees with encoding/json on every valid message: the
// values it returns, and whether it is an error.
func FuzzDecodeListen(f *testing.F) {
	for _, s := range []string{
		`{"session_id":"a1","type":"listen","state":"start","mode":"auto"}`, // firmware 2.4.2
		`{"session_id":"","type":"listen","state":"stop"}`,
		`{"type":"listen","state":"detect","text":"你好小智"}`,
		` {"type":"listen", "state" : "start" , "mode":"realtime"} `,
		`{"type":"listen","state":"detect","text":"say \"hi\"\n"}`,
		`{"type":"listen","state":null,"mode":null}`,
		`{"type":"listen","State":"start"}`,
		`{"type":"listen","state":"start","state":"stop"}`,
		`{"type":"listen","state":"start","mode":1}`,
		`{"type":"listen","state":{"a":[1,2,{"b":"c"}]}}`,
		`{"type":"listen","st\u0061te":"start"}`,
		`{"type":"listen","state":"\ud83d\ude00"}`,
		`{"type":"listen","mode":"auto","extra":[true,false,null,1.5e3]}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		raw := []byte(s)
		if !json.Valid(raw) {
			return // decodeListen is given decoded messages only
		}
		state, mode, text, err := decodeListen(raw)
		var want struct {
			State string `json:"state"`
			Mode  string `json:"mode"`
			Text  string `json:"text"`
		}
		werr := json.Unmarshal(raw, &want)
		if (err != nil) != (werr != nil) {
			t.Fatalf("%s: error %v, encoding/json %v", s, err, werr)
		}
		if err == nil && (state != want.State || mode != want.Mode || text != want.Text) {
			t.Fatalf("%s: %q %q %q, encoding/json %q %q %q", s, state, mode, text, want.State, want.Mode, want.Text)
		}
	})
}
