package catalog

import (
	"fmt"
	"math/rand"
	"reflect"
	"strings"
	"testing"
	"testing/quick"

	"github.com/xiaozhi-hub/hub"
)

// toolSet is a random device with random tool names, for testing/quick.
type toolSet struct {
	DeviceID string
	Tools    []string
}

var alphabet = []string{"self", ".", ".", "_", "lamp", "灯", "风扇", "开关", "-", " ", ":", "a", "Z", "9", "é", "turn_on",
	"audio_speaker", "set_volume", "..", "x", strings.Repeat("long_name_", 4), "🙂", "\x00"}

func randomName(r *rand.Rand) string {
	var b strings.Builder
	for n := 1 + r.Intn(8); n > 0; n-- {
		b.WriteString(alphabet[r.Intn(len(alphabet))])
	}
	return b.String()
}

func (toolSet) Generate(r *rand.Rand, _ int) reflect.Value {
	ts := toolSet{DeviceID: fmt.Sprintf("%02x:%02x:%02x:00:00:%02x", r.Intn(256), r.Intn(256), r.Intn(256), r.Intn(256))}
	seen := map[string]bool{}
	for n := r.Intn(30); n > 0; n-- {
		if name := randomName(r); !seen[name] {
			seen[name] = true
			ts.Tools = append(ts.Tools, name)
		}
	}
	return reflect.ValueOf(ts)
}

func buildFor(ts toolSet) *deviceTools {
	c := &Catalog{opts: Options{}.withDefaults()}
	tools := make([]hub.Tool, len(ts.Tools))
	for i, n := range ts.Tools {
		tools[i] = hub.Tool{Name: n, InputSchema: []byte(`{"type":"object","properties":{}}`)}
	}
	return c.build(hub.Device{ID: ts.DeviceID}, "", DeviceKey(ts.DeviceID), tools, nil)
}

// TestNameProperties checks, over random tool sets: every name is a valid
// function name, names are unique, each maps back to its (device, tool),
// and names do not depend on the order tools are listed in.
func TestNameProperties(t *testing.T) {
	all := map[string]string{} // name → device/tool, across devices
	prop := func(ts toolSet) bool {
		dt := buildFor(ts)
		if len(dt.tools) != len(ts.Tools) {
			t.Logf("lost tools: %d of %d", len(dt.tools), len(ts.Tools))
			return false
		}
		for _, tool := range dt.tools {
			if !NamePattern.MatchString(tool.Name) {
				t.Logf("invalid name %q for %q", tool.Name, tool.Target)
				return false
			}
			i, _ := named(dt.tools, tool.Name)
			got := dt.tools[i]
			if got.DeviceID != ts.DeviceID || got.Target != tool.Target {
				t.Logf("%q maps back to %s/%q, want %s/%q", tool.Name, got.DeviceID, got.Target, ts.DeviceID, tool.Target)
				return false
			}
			if want := Name(ts.DeviceID, tool.Target); want != tool.Name {
				t.Logf("%q: catalog name %q differs from Name %q", tool.Target, tool.Name, want)
				return false
			}
			id := ts.DeviceID + "\x00" + tool.Target
			if prev, ok := all[tool.Name]; ok && prev != id {
				t.Logf("%q names both %q and %q", tool.Name, prev, id)
				return false
			}
			all[tool.Name] = id
		}
		// Same tools in reverse order: same names.
		rev := toolSet{DeviceID: ts.DeviceID}
		for i := len(ts.Tools) - 1; i >= 0; i-- {
			rev.Tools = append(rev.Tools, ts.Tools[i])
		}
		again := buildFor(rev)
		for _, tool := range dt.tools {
			if _, ok := named(again.tools, tool.Name); !ok {
				t.Logf("name %q not stable under reordering", tool.Name)
				return false
			}
		}
		return true
	}
	if err := quick.Check(prop, &quick.Config{MaxCount: 2000}); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d distinct names checked", len(all))
}

func TestNonASCIINamesStayDistinct(t *testing.T) {
	a, b := Name("aa:bb", "self.灯.开关"), Name("aa:bb", "self.风扇.开关")
	if a == b || !NamePattern.MatchString(a) || !NamePattern.MatchString(b) {
		t.Fatalf("self.灯.开关 → %q, self.风扇.开关 → %q", a, b)
	}
	if !strings.HasPrefix(a, DeviceKey("aa:bb")+"_self--") {
		t.Errorf("lossy name %q should keep the ASCII words and mark the hash with --", a)
	}
	if got := Name("aa:bb", "self.audio_speaker.set_volume"); got != DeviceKey("aa:bb")+"_self-audio_speaker-set_volume" {
		t.Errorf("firmware name encoded as %q", got)
	}
	long := "self." + strings.Repeat("very_long_tool_name.", 5)
	if n := Name("aa:bb", long); len(n) > MaxNameLen || !NamePattern.MatchString(n) || !strings.Contains(n, "--") {
		t.Errorf("long name %q", n)
	}
	if DeviceKey("aa:bb") == DeviceKey("aa:bc") {
		t.Error("device keys collide")
	}
}

func TestCollidingTargetsKeepDistinctNames(t *testing.T) {
	c := &Catalog{opts: Options{}.withDefaults()}
	lamp := hub.Thing{Name: "Lamp", Methods: map[string]hub.ThingMethod{"TurnOn": {}}}
	dt := c.build(hub.Device{ID: "x"}, "", DeviceKey("x"),
		[]hub.Tool{{Name: "Lamp.TurnOn", InputSchema: []byte(`{"type":"object"}`)}}, []hub.Thing{lamp})
	if len(dt.tools) != 2 || dt.tools[0].Name == dt.tools[1].Name {
		t.Fatalf("MCP tool and IoT method with one name: %+v", dt.tools)
	}
	for _, tool := range dt.tools {
		if !NamePattern.MatchString(tool.Name) {
			t.Errorf("invalid %q", tool.Name)
		}
	}
}

func FuzzToolPart(f *testing.F) {
	for _, s := range []string{"self.lamp.turn_on", "self.灯.开关", "", "..", "a--b", strings.Repeat("x", 100)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, tool string) {
		p := toolPart(tool, 54, hashLen)
		if len(p) > 54 || !NamePattern.MatchString("d_"+p) {
			t.Fatalf("toolPart(%q) = %q", tool, p)
		}
		if lossless(tool) && len(tool) <= 54 {
			if strings.Contains(p, "--") || strings.ReplaceAll(p, "-", ".") != tool {
				t.Fatalf("lossless %q encoded as %q", tool, p)
			}
		} else if !strings.Contains(p, "--") {
			t.Fatalf("lossy %q encoded without a hash: %q", tool, p)
		}
		if p != toolPart(tool, 54, hashLen) {
			t.Fatal("not deterministic")
		}
	})
}
