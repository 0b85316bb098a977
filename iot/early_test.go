package iot

import (
	"encoding/json"
	"fmt"
	"testing"
)

func TestEarlyStatesAreBounded(t *testing.T) {
	var e Early
	for i := range MaxEarlyThings {
		if !e.Keep(fmt.Sprint("thing", i), map[string]json.RawMessage{"v": json.RawMessage("1")}) {
			t.Fatalf("thing %d refused", i)
		}
	}
	if e.Keep("one too many", map[string]json.RawMessage{"v": json.RawMessage("1")}) {
		t.Fatal("kept more than MaxEarlyThings things")
	}
	big := map[string]json.RawMessage{}
	for i := range MaxEarlyValues + 1 {
		big[fmt.Sprint("k", i)] = json.RawMessage("1")
	}
	if e.Keep("thing0", big) {
		t.Fatal("kept more than MaxEarlyValues values")
	}
	if got := e.Take("thing0"); len(got) != MaxEarlyValues {
		t.Fatalf("took %d values, want %d", len(got), MaxEarlyValues)
	}
	if e.Take("thing0") != nil {
		t.Fatal("Take must remove the state")
	}
	if !e.Keep("one too many", map[string]json.RawMessage{"v": json.RawMessage("1")}) {
		t.Fatal("room freed by Take is not reused")
	}
}
