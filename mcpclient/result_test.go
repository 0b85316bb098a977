package mcpclient

import (
	"encoding/json"
	"testing"

	"github.com/xiaozhi-hub/hub/protocol"
)

// decodeCallResult must agree with encoding/json wherever it answers.
func TestDecodeCallResultMatchesEncodingJSON(t *testing.T) {
	for _, in := range []string{
		`{"content":[{"type":"text","text":"true"}],"isError":false}`,
		`{"content":[],"isError":true}`,
		` {"isError":null,"content":[{"type":"image","image":"{\"a\":1}"}]} `,
		`{"content":[{"type":"text","text":"x"}]}`,
		`{"content":[1],"isError":"yes"}`,
		`{"content":{"a":1}}`,
		`{"content":null}`,
		`{"Content":[1]}`,
		`{"content":[1],"content":[2]}`,
		`[]`,
		`{"content":[1]`,
	} {
		content, isError, ok := decodeCallResult(protocol.RPC{Result: []byte(in)})
		var r struct {
			Content json.RawMessage `json:"content"`
			IsError bool            `json:"isError"`
		}
		err := json.Unmarshal([]byte(in), &r)
		if !ok {
			continue // encoding/json decides
		}
		if err != nil || string(content) != string(r.Content) || isError != r.IsError {
			t.Errorf("%s: fast (%s, %v), encoding/json (%s, %v, %v)", in, content, isError, r.Content, r.IsError, err)
		}
	}
	if _, _, ok := decodeCallResult(protocol.RPC{Result: []byte(`{"content":[{"type":"text","text":"true"}],"isError":false}`)}); !ok {
		t.Error("the common result took the slow path")
	}
}

func TestDecodeToolFastMatchesEncodingJSON(t *testing.T) {
	for _, in := range []string{
		`{"name":"self.get_device_status","description":"Provides\nstatus","inputSchema":{"type":"object","properties":{}}}`,
		`{"name":"self.reboot","description":"Reboot","inputSchema":{"type":"object","properties":{}},"annotations":{"audience":["user"]}}`,
		`{"name":"x","annotations":{"audience":["user","assistant"]}}`,
		`{"name":"x","annotations":null,"inputSchema":null,"description":null}`,
		`{"name":"灯","description":"开灯 \u00e9"}`,
		`{"name":"","description":"d"}`,
		`{"description":"d"}`,
		`{"name":5}`,
		`{"name":"x","description":7}`,
		`{"NAME":"x"}`,
		`{"name":"a","name":"b"}`,
		`[1]`,
		`null`,
	} {
		fast, ok := decodeToolFast([]byte(in), false)
		slow, err := decodeToolJSON([]byte(in))
		if !ok {
			continue
		}
		if err != nil || fast.Name != slow.Name || fast.Description != slow.Description || string(fast.InputSchema) != string(slow.InputSchema) ||
			string(fast.Annotations) != string(slow.Annotations) || fast.UserOnly != slow.UserOnly {
			t.Errorf("%s:\nfast %+v\nslow %+v %v", in, fast, slow, err)
		}
	}
}

func TestDecodePageFastMatchesEncodingJSON(t *testing.T) {
	for _, in := range []string{
		`{"tools":[{"name":"a"},{"name":"b","inputSchema":{"type":"object"}}],"nextCursor":"c"}`,
		`{"tools":[]}`,
		`{"tools":null,"nextCursor":null}`,
		`{"nextCursor":""}`,
		`{"tools":{"name":"a"}}`,
		`{"tools":[1,"x",null]}`,
		`{"Tools":[]}`,
	} {
		var fast, slow struct {
			Tools      []json.RawMessage `json:"tools"`
			NextCursor json.RawMessage   `json:"nextCursor"`
		}
		ok := decodePage(protocol.RPC{Result: []byte(in)}, &fast.Tools, &fast.NextCursor)
		err := json.Unmarshal([]byte(in), &slow)
		if !ok {
			continue
		}
		if err != nil || len(fast.Tools) != len(slow.Tools) || string(fast.NextCursor) != string(slow.NextCursor) {
			t.Errorf("%s: fast %q %s, slow %q %s %v", in, fast.Tools, fast.NextCursor, slow.Tools, slow.NextCursor, err)
			continue
		}
		for i := range fast.Tools {
			if string(fast.Tools[i]) != string(slow.Tools[i]) {
				t.Errorf("%s: tool %d %s, slow %s", in, i, fast.Tools[i], slow.Tools[i])
			}
		}
	}
}
