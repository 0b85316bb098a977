package schema_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/schema"
)

// The firmware's set_volume schema (docs/protocol.md §8.6).
const volume = `{"type":"object","properties":{"volume":{"type":"integer","minimum":0,"maximum":100}},"required":["volume"]}`

func newValidator(t testing.TB) *schema.Validator {
	v := schema.New()
	t.Cleanup(v.Close)
	return v
}

func TestValidate(t *testing.T) {
	v := newValidator(t)
	ctx := context.Background()
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
		err := v.Validate(ctx, json.RawMessage(volume), json.RawMessage(c.args))
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
	if err := v.Validate(ctx, json.RawMessage(`{"type":"object","properties":{}}`), json.RawMessage(`{}`)); err != nil {
		t.Errorf("no arguments for a no-argument tool: %v", err)
	}
	// A schema the device got wrong is not the caller's fault.
	if err := v.Validate(ctx, json.RawMessage(`{"type":12}`), json.RawMessage(`{}`)); err != nil {
		t.Errorf("uncompilable tool schema must not block the call: %v", err)
	}
}

// Schemas that cost the library seconds to minutes are refused by the
// check, and calls to their tools go to the device unchecked.
func TestSchemaBombsAreNotChecked(t *testing.T) {
	v := newValidator(t)
	bombs := map[string]string{
		"ref fan-out (1.3 KB)":   fanOut(24),
		"nested (74 KB)":         nested(3700),
		"nested (small)":         nested(schema.MaxSchemaDepth),
		"recursive":              `{"type":"object","properties":{"a":{"$ref":"#"}}}`,
		"recursive through defs": `{"$defs":{"n":{"type":"array","items":{"$ref":"#/$defs/n"}}},"properties":{"t":{"$ref":"#/$defs/n"}}}`,
		"dangling ref":           `{"properties":{"a":{"$ref":"#/$defs/none"}}}`,
		"dynamic ref":            `{"properties":{"a":{"$dynamicRef":"#x"}}}`,
		"unknown meta-schema":    `{"$schema":"http://example.com/s","type":"object"}`,
		"too many refs":          manyRefs(schema.MaxSchemaRefs + 1),
		"huge number":            `{"properties":{"x":{"multipleOf":1e-99999999}}}`,
	}
	for name, s := range bombs {
		err := v.Prepare(json.RawMessage(s))
		if !errors.Is(err, schema.ErrUnchecked) {
			t.Errorf("%s: Prepare = %v, want ErrUnchecked", name, err)
		}
		if err := v.Validate(context.Background(), json.RawMessage(s), json.RawMessage(`{"x":-1,"a":1,"t":[[[[]]]]}`)); err != nil {
			t.Errorf("%s: a call to a tool with an unchecked schema goes to the device, got %v", name, err)
		}
	}
	// Inside the bounds, references are followed.
	ok := fanOut(5)
	if err := v.Prepare(json.RawMessage(ok)); err != nil {
		t.Fatalf("fan-out 5 is within bounds: %v", err)
	}
	if err := v.Validate(context.Background(), json.RawMessage(ok), json.RawMessage(`{"x":-1}`)); hub.ErrorCode(err) != hub.EINVALID {
		t.Errorf("want EINVALID through $ref, got %v", err)
	}
}

// A schema may refer only to itself: the hub opens no file a device names.
func TestNoFileReferences(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret.json")
	if err := os.WriteFile(secret, []byte(`{"const":"TOP-SECRET-42"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	v := newValidator(t)
	for _, s := range []string{
		`{"type":"object","properties":{"a":{"$ref":"file://` + secret + `"}}}`,
		`{"type":"object","properties":{"a":{"$ref":"` + secret + `"}}}`,
		`{"$id":"file://` + dir + `/x.json","type":"object","properties":{"a":{"$ref":"secret.json"}}}`,
		`{"$schema":"file://` + secret + `","type":"object"}`,
	} {
		if err := v.Prepare(json.RawMessage(s)); !errors.Is(err, schema.ErrUnchecked) {
			t.Errorf("%s: Prepare = %v, want ErrUnchecked", s, err)
		}
		err := v.Validate(context.Background(), json.RawMessage(s), json.RawMessage(`{"a":"guess"}`))
		if err != nil && strings.Contains(err.Error(), "TOP-SECRET") {
			t.Errorf("the secret file's content reached the caller: %v", err)
		}
	}
}

// The standard drafts' meta-schemas are built in: naming one still works.
func TestStandardMetaSchemas(t *testing.T) {
	v := newValidator(t)
	for _, ms := range []string{
		"https://json-schema.org/draft/2020-12/schema",
		"https://json-schema.org/draft/2019-09/schema",
		"http://json-schema.org/draft-07/schema#",
		"http://json-schema.org/draft-06/schema#",
		"http://json-schema.org/draft-04/schema#",
	} {
		s := json.RawMessage(`{"$schema":"` + ms + `","type":"object","properties":{"n":{"type":"integer"}}}`)
		if err := v.Prepare(s); err != nil {
			t.Errorf("%s: %v", ms, err)
		}
		if _, err := v.Compile(context.Background(), s); err != nil {
			t.Errorf("%s: compile: %v", ms, err)
		}
		if err := v.Validate(context.Background(), s, json.RawMessage(`{"n":"x"}`)); hub.ErrorCode(err) != hub.EINVALID {
			t.Errorf("%s: want EINVALID, got %v", ms, err)
		}
	}
}

// A call whose context has ended while its schema waits to be compiled
// gets ETIMEOUT instead of waiting.
func TestValidateRespectsContext(t *testing.T) {
	v := newValidator(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := v.Validate(ctx, json.RawMessage(volume), json.RawMessage(`{"volume":1}`))
	if hub.ErrorCode(err) != hub.ETIMEOUT {
		t.Errorf("want ETIMEOUT, got %v", err)
	}
}

// Arguments too big to check against a schema in bounded time are refused.
func TestValidationWorkIsBounded(t *testing.T) {
	v := newValidator(t)
	big := `{"a":[` + strings.Repeat("1,", schema.MaxValidationWork) + `1]}`
	err := v.Validate(context.Background(), json.RawMessage(volume), json.RawMessage(big))
	if hub.ErrorCode(err) != hub.EINVALID || !strings.Contains(err.Error(), "JSON values") {
		t.Errorf("want EINVALID about the size, got %v", err)
	}
}

func manyRefs(n int) string {
	var b strings.Builder
	b.WriteString(`{"$defs":{"i":{"type":"integer"}},"properties":{`)
	for i := range n {
		fmt.Fprintf(&b, `"a%d":{"$ref":"#/$defs/i"},`, i)
	}
	b.WriteString(`"b":{}}}`)
	return b.String()
}

// Numbers the library would turn into huge exact rationals (or crash on)
// are refused in arguments too.
func TestHugeNumbersInArguments(t *testing.T) {
	v := newValidator(t)
	for _, n := range []string{"1e99999999", "1e-99999999", strings.Repeat("9", 100)} {
		err := v.Validate(context.Background(), json.RawMessage(volume), json.RawMessage(`{"volume":`+n+`}`))
		if hub.ErrorCode(err) != hub.EINVALID || !strings.Contains(err.Error(), "number") {
			t.Errorf("%s: want EINVALID about the number, got %v", n, err)
		}
	}
}
