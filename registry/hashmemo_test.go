package registry

import (
	"encoding/json"
	"testing"

	"github.com/xiaozhi-hub/hub"
)

func TestHashMemoAgreesWithHashTools(t *testing.T) {
	var hm hashMemo
	lists := [][]hub.Tool{
		{{Name: "a", Description: "d", InputSchema: json.RawMessage(`{"type":"object"}`)}},
		{{Name: "a", Description: "d", InputSchema: json.RawMessage(`{ "type" : "object" }`)}},
		{{Name: "a", Description: "d", InputSchema: json.RawMessage(`{"type":"object"}`), UserOnly: true}},
		{{Name: "a", Description: "d"}, {Name: "b", Annotations: json.RawMessage(`{"audience":["user"]}`)}},
		{{Name: "ab", Description: ""}, {Name: "", Description: "ab"}},
		{{Name: "a", Description: "b"}},
		nil,
	}
	for round := range 2 { // misses, then hits
		for i, l := range lists {
			if got, want := hm.hash(l), HashTools(l); got != want {
				t.Errorf("round %d, list %d: memo %s, HashTools %s", round, i, got, want)
			}
		}
	}
	if len(hm.m) != len(lists) {
		t.Errorf("%d entries for %d distinct lists", len(hm.m), len(lists))
	}
}
