package protocol

import (
	"fmt"
	"reflect"
	"testing"
)

var hellos = []string{
	`{"type":"hello","version":3,"features":{"aec":true,"mcp":true,"glyph_push":true},"text_font":{"bundle":"noto-v1"},"transport":"websocket","audio_params":{"format":"opus","sample_rate":16000,"channels":1,"frame_duration":60}}`,
	`{"type":"hello","version": 1,"transport":"websocket","audio_params":{"format":"opus","sample_rate":16000,"channels":1,"frame_duration":60}}`,
	`{"type":"hello"}`,
	`{"type":"hello","version":null,"features":null,"audio_params":null,"transport":null}`,
	`{"type":"hello","features":{"mcp":"true"}}`,
	`{"type":"hello","features":{"MCP":true}}`,
	`{"type":"hello","features":{"mcp":true,"mcp":false}}`,
	`{"type":"hello","features":[1]}`,
	`{"type":"hello","version":"1"}`,
	`{"type":"hello","version":1.5}`,
	`{"type":"hello","version":1e400}`,
	`{"type":"hello","version":2e0}`,
	`{"type":"hello","transport":5}`,
	`{"type":"hello","transport":"web\u0073ocket"}`,
	`{"type":"hello","Version":2}`,
	`{"type":"hello","audio_params":{"sample_rate":"x"}}`,
	`{"type":"hello","audio_params":{"Sample_Rate":24000}}`,
	`{"type":"hello","audio_params":7}`,
	`{"type":"hello","language":"en-US"}`,
	`{"type":"hello","language":"en\u002dUS"}`,
	`{"type":"hello","language":5}`,
	`{"type":"hello","language":null}`,
	`{"type":"hello","language":"en US; drop"}`,
	`{"type":"hello","language":"abcdefghijklmnopq"}`,
}

// The hello's language (the browser test device sends it) is kept when it
// is a short language tag, and ignored otherwise.
func TestHelloLanguage(t *testing.T) {
	for in, want := range map[string]string{
		`{"type":"hello","language":"en-US"}`:                  "en-US",
		`{"type":"hello","language":"zh_CN"}`:                  "zh_CN",
		`{"type":"hello","language":5}`:                        "",
		`{"type":"hello","language":"en US; drop"}`:            "",
		`{"type":"hello","language":"abcdefghijklmnopq"}`:      "",
		`{"type":"hello","version":1,"transport":"websocket"}`: "",
	} {
		h, err := DecodeClientHello([]byte(in))
		if err != nil || h.Language != want {
			t.Errorf("%s: language %q, %v; want %q", in, h.Language, err, want)
		}
	}
}

// The hello is decoded once, from the checked frame; the answer is the
// one encoding/json gives.
func TestHelloMatchesDecodeClientHello(t *testing.T) {
	for _, in := range hellos {
		m, err := DecodeMessage([]byte(in))
		if err != nil || m.Type != TypeHello {
			t.Fatalf("%s: %v", in, err)
		}
		got, gerr := m.Hello()
		want, werr := DecodeClientHello([]byte(in))
		if fmt.Sprint(gerr) != fmt.Sprint(werr) || !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\nHello            %+v %v\nDecodeClientHello %+v %v", in, got, gerr, want, werr)
		}
	}
	m, _ := DecodeMessage([]byte(hellos[0]))
	if _, ok := helloFast(m.Raw); !ok {
		t.Error("the firmware's hello took the general path")
	}
}

func FuzzHello(f *testing.F) {
	for _, s := range hellos {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		m, err := DecodeMessage(in)
		if err != nil || m.Type != TypeHello {
			return
		}
		got, gerr := m.Hello()
		want, werr := DecodeClientHello(in)
		if fmt.Sprint(gerr) != fmt.Sprint(werr) || !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: Hello %+v %v, DecodeClientHello %+v %v", in, got, gerr, want, werr)
		}
	})
}
