package schema_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/schema"
)

// FuzzSchema feeds device-written schemas and caller-written arguments to
// a Validator. Each input is either refused by Check (ErrUnchecked, and
// then never compiled) or checked, compiled and validated within a
// generous CPU bound: the bounds in check.go exist so that no schema
// within them is slow. Run with
//
//	go test -run x -fuzz FuzzSchema -fuzztime 3m ./schema
func FuzzSchema(f *testing.F) {
	for _, s := range []string{
		volume, fanOut(3), fanOut(24), nested(3), nested(30), manyRefs(3),
		`{"type":"object","properties":{"a":{"$ref":"#"}}}`,
		`{"$ref":"file:///etc/passwd"}`,
		`{"$schema":"http://json-schema.org/draft-07/schema#","properties":{"a":{"$ref":"#/definitions/x"}},"definitions":{"x":{"type":"string","pattern":"^a+$"}}}`,
		`{"$defs":{"x":{"$anchor":"x","type":"integer"}},"properties":{"a":{"$ref":"#x"}}}`,
		`{"properties":{"a":{"$ref":"#/properties/b","$ref":1},"b":{}}}`,
		`{"items":[{"$ref":"#/items/1"},{"type":"integer"}]}`,
		`true`, `{"type":12}`, `[]`, `{"properties":{"x":{"multipleOf":1e-400}}}`,
	} {
		f.Add(s, `{"a":"aaa","x":1,"volume":5}`)
	}
	v := schema.New()
	f.Cleanup(v.Close)
	f.Fuzz(func(t *testing.T, s, args string) {
		start := time.Now()
		err := v.Prepare(json.RawMessage(s))
		if err != nil && !errors.Is(err, schema.ErrUnchecked) {
			t.Fatalf("Prepare: %v", err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err == nil {
			if _, err := v.Compile(ctx, json.RawMessage(s)); err != nil && !errors.Is(err, schema.ErrBadSchema) {
				t.Fatalf("Compile: %v", err)
			}
		}
		verr := v.Validate(ctx, json.RawMessage(s), json.RawMessage(args))
		if c := hub.ErrorCode(verr); verr != nil && c != hub.EINVALID {
			t.Fatalf("Validate: %v", verr)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("schema %q with arguments %q took %v (checked: %v)", s, args, d, err == nil)
		}
	})
}
