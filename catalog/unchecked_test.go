package catalog_test

import (
	"strings"
	"testing"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/catalog"
	ct "github.com/xiaozhi-hub/hub/catalog/catalogtest"
)

// A tool whose schema the hub does not check is offered to agents with
// only its argument names, types and descriptions: no $ref, no nesting.
func TestUncheckedToolSchemaIsSummarized(t *testing.T) {
	bomb := `{"type":"object","required":["level"],"properties":{"level":{"type":"integer","description":"how bright",` +
		`"allOf":[{"$ref":"#/$defs/a"},{"$ref":"file:///etc/passwd"}]}},"$defs":{"a":{"allOf":[{"$ref":"#/$defs/a"}]}}}`
	reg, _ := ct.NewHome(t, []ct.Spec{{ID: "aa:00:00:00:00:99", Name: "Odd", Tools: []hub.Tool{
		ct.Tool("self.odd.set", "Sets the level.", `{"x":{"type":"integer"}}`),
		{Name: "self.odd.bomb", Description: "Sets the level.", InputSchema: []byte(bomb)},
	}}})
	tools, _, _ := reg.Tools("aa:00:00:00:00:99")
	if tools[0].Unchecked != "" || tools[1].Unchecked == "" {
		t.Fatalf("the registry did not mark the bomb: %+v", tools)
	}
	cat := catalog.New(reg, catalog.Options{})
	got := string(find(t, cat.Tools(ctx0), "self.odd.bomb").InputSchema)
	want := `{"properties":{"level":{"description":"how bright","type":"integer"}},"required":["level"],"type":"object"}`
	if got != want {
		t.Errorf("schema offered to agents:\n got %s\nwant %s", got, want)
	}
	if s := string(find(t, cat.Tools(ctx0), "self.odd.set").InputSchema); !strings.Contains(s, `"x"`) {
		t.Errorf("a checked tool's schema is offered as it is, got %s", s)
	}
}
