package api

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"reflect"
	"testing"

	"github.com/xiaozhi-hub/hub"
)

// The fast decoding of a call body must agree with decodeBytes wherever
// it answers.
func TestCallBodyFastMatchesDecoder(t *testing.T) {
	for _, in := range []string{
		`{"arguments":{"volume":30}}`,
		` {"arguments":{"volume":30},"timeoutMs":1500} `,
		`{"timeoutMs":null,"arguments":null}`,
		`{"arguments":[1]}`,
		`{"arguments":"x","timeoutMs":-5}`,
		`{}`,
		`{"arguments":{},"timeoutMs":1.5}`,
		`{"arguments":{},"timeoutMs":1e3}`,
		`{"arguments":{},"timeoutMs":"10"}`,
		`{"arguments":{},"timeoutMs":99999999999999999999}`,
		`{"args":{}}`,
		`{"Arguments":{}}`,
		`{"arguments":{}} {}`,
		`{"arguments":{},"arguments":{"a":1}}`,
		`[]`,
		``,
	} {
		var fast callBody
		ok := fast.decodeFast([]byte(in))
		var slow callBody
		err := decodeBytes([]byte(in), &slow, callSpec, true)
		if !ok {
			continue
		}
		if err != nil || !reflect.DeepEqual(fast, slow) {
			t.Errorf("%s: fast %+v, decoder %+v (%v)", in, show(fast), show(slow), err)
		}
	}
	var c callBody
	if !c.decodeFast([]byte(`{"arguments":{"volume":30},"timeoutMs":1000}`)) || *c.TimeoutMs != 1000 {
		t.Error("the common body took the slow path")
	}
}

func show(c callBody) string {
	if c.TimeoutMs == nil {
		return fmt.Sprintf("{%s nil}", c.Arguments)
	}
	return fmt.Sprintf("{%s %d}", c.Arguments, *c.TimeoutMs)
}

func TestWriteCallResultMatchesWriteJSON(t *testing.T) {
	for _, res := range []hub.CallResult{
		{Content: json.RawMessage(`[{"type":"text","text":"true"}]`)},
		{Content: json.RawMessage(` [ {"type": "text", "text": "<b>&</b>"} ] `), IsError: true},
		{Content: json.RawMessage(`[`)},
	} {
		a, b := httptest.NewRecorder(), httptest.NewRecorder()
		writeCallResult(a, res)
		writeJSON(b, 200, res)
		if a.Code != b.Code || a.Body.String() != b.Body.String() || !reflect.DeepEqual(a.Header(), b.Header()) {
			t.Errorf("%s: %d %q %v, writeJSON %d %q %v", res.Content, a.Code, a.Body, a.Header(), b.Code, b.Body, b.Header())
		}
	}
}
