package schema_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/schema"
)

// The firmware's set_volume schema (docs/protocol.md §8.6).
const volume = `{"type":"object","properties":{"volume":{"type":"integer","minimum":0,"maximum":100}},"required":["volume"]}`

func TestValidate(t *testing.T) {
	v := schema.New()
	cases := map[string]struct {
		args, want string // want "" means valid
	}{
		"ok":            {`{"volume":50}`, ""},
		"above maximum": {`{"volume":150}`, "maximum"},
		"string number": {`{"volume":"50"}`, "/volume"},
		"missing":       {`{}`, "volume"},
		"not an object": {`[50]`, "must be a JSON object"},
		"invalid JSON":  {`{"volume":`, "not valid JSON"},
		"fraction":      {`{"volume":1.5}`, "/volume"},
	}
	for name, c := range cases {
		err := v.Validate(json.RawMessage(volume), json.RawMessage(c.args))
		if c.want == "" {
			if err != nil {
				t.Errorf("%s: %v", name, err)
			}
			continue
		}
		if hub.ErrorCode(err) != hub.EINVALID || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: want EINVALID mentioning %q, got %v", name, c.want, err)
		}
	}
	if err := v.Validate(json.RawMessage(`{"type":"object","properties":{}}`), nil); err != nil {
		t.Errorf("no arguments for a no-argument tool: %v", err)
	}
	// A schema the device got wrong is not the caller's fault.
	if err := v.Validate(json.RawMessage(`{"type":12}`), json.RawMessage(`{}`)); err != nil {
		t.Errorf("uncompilable tool schema must not block the call: %v", err)
	}
}
