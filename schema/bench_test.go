package schema_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/xiaozhi-hub/hub/schema"
)

// BenchmarkAttacks measures what a device's schema costs the hub: "library"
// is the schema library used directly (what the hub did before Check),
// "hub" is Validator.Validate on a fresh Validator per iteration (check,
// compile when within bounds, validate). Run with
//
//	go test -run x -bench Attacks -benchtime 1x ./schema
func BenchmarkAttacks(b *testing.B) {
	args := json.RawMessage(`{"x":1}`)
	cases := []struct{ name, schema string }{
		{"firmware", volume},
		{"fanout16-40KB-expanded", fanOut(16)},
		{"fanout24-1.3KB", fanOut(24)},
		{"nested1000", nested(1000)},
		{"nested3700-74KB", nested(3700)},
		{"largest-allowed-fanout", fanOut(largestFanOut())},
	}
	for _, c := range cases {
		if !strings.HasPrefix(c.name, "fanout24") && !strings.HasPrefix(c.name, "nested3700") {
			b.Run("library/"+c.name, func(b *testing.B) {
				for b.Loop() {
					doc, err := jsonschema.UnmarshalJSON(strings.NewReader(c.schema))
					if err != nil {
						b.Fatal(err)
					}
					comp := jsonschema.NewCompiler()
					if err := comp.AddResource("mem://t.json", doc); err != nil {
						b.Fatal(err)
					}
					s, err := comp.Compile("mem://t.json")
					if err != nil {
						b.Fatal(err)
					}
					inst, _ := jsonschema.UnmarshalJSON(bytes.NewReader(args))
					_ = s.Validate(inst)
				}
			})
		}
		b.Run("hub/"+c.name, func(b *testing.B) {
			for b.Loop() {
				v := schema.New()
				_ = v.Validate(context.Background(), json.RawMessage(c.schema), args)
				v.Close()
			}
		})
	}
	// The most work one call may ask for: arguments at the work bound
	// against the largest schema within bounds.
	s := json.RawMessage(fanOut(largestFanOut()))
	v := schema.New()
	defer v.Close()
	if _, err := v.Compile(context.Background(), s); err != nil {
		b.Fatal(err)
	}
	b.Run("hub/largest-allowed-fanout-biggest-args", func(b *testing.B) {
		big := `{"x":1,"y":[` + strings.Repeat("1,", schema.MaxValidationWork/schema.MaxSchemaNodes-3) + `1]}`
		for b.Loop() {
			_ = v.Validate(context.Background(), s, json.RawMessage(big))
		}
	})
}

// largestFanOut is the deepest fanOut Check accepts.
func largestFanOut() int {
	n := 1
	for schema.Check(json.RawMessage(fanOut(n+1))) == nil {
		n++
	}
	return n
}
