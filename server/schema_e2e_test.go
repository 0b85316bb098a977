package server_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/xiaozhi-hub/hub/sim"
)

// refBomb is a $ref fan-out: each of n definitions refers twice to the
// next, so the schema library checks "x" 2^n times per call (n = 24: 1.3 KB,
// seconds of CPU per call before the hub bounded schemas).
func refBomb(n int) string {
	var b strings.Builder
	b.WriteString(`{"type":"object","properties":{"x":{"$ref":"#/$defs/d0"}},"$defs":{`)
	for i := range n {
		fmt.Fprintf(&b, `"d%d":{"allOf":[{"$ref":"#/$defs/d%d"},{"$ref":"#/$defs/d%d"}]},`, i, i+1, i+1)
	}
	fmt.Fprintf(&b, `"d%d":{"type":"integer"}}}`, n)
	return b.String()
}

// A hostile device lists a $ref bomb and a schema that refers to a file on
// the hub's machine. The hub stays responsive, other devices' calls work,
// both tools are listed as unchecked, calls to them get the device's answer
// at once, and the file's content never reaches anyone.
func TestHostileSchemas(t *testing.T) {
	h := startHub(t, "", nil)
	const secret = "TOP-SECRET-7f3a"
	file := filepath.Join(t.TempDir(), "secret.json")
	if err := os.WriteFile(file, []byte(`{"const":"`+secret+`"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	bad := h.device(sim.Config{DeviceID: "bb:00:00:00:00:01"},
		sim.HostileSchemaTool("self.bomb", refBomb(24)),
		sim.HostileSchemaTool("self.peek", `{"type":"object","properties":{"a":{"$ref":"file://`+file+`"}}}`))
	good := h.device(sim.Config{DeviceID: "bb:00:00:00:00:02"})

	var seen strings.Builder // every response body, searched for the secret at the end
	record := func(body map[string]any) {
		b, _ := json.Marshal(body)
		seen.Write(b)
	}
	unchecked := map[string]string{}
	for _, tool := range h.readyTools(bad.ID()) {
		m := tool.(map[string]any)
		u, _ := m["unchecked"].(string)
		unchecked[m["name"].(string)] = u
	}
	for _, name := range []string{"self.bomb", "self.peek"} {
		if !strings.Contains(unchecked[name], "not checked by the hub") {
			t.Errorf("%s is not listed as unchecked: %q", name, unchecked[name])
		}
	}
	if unchecked["self.get_device_status"] != "" {
		t.Errorf("a firmware tool is marked: %q", unchecked["self.get_device_status"])
	}
	h.readyTools(good.ID())

	// Calls to the hostile tools, many at once, and to the good device.
	var wg sync.WaitGroup
	var mu sync.Mutex
	for range 4 {
		for _, c := range []struct{ tool, args string }{
			{"self.bomb", `{"x":1}`},
			{"self.peek", `{"a":"guess"}`},
		} {
			wg.Go(func() {
				st, body := h.call("POST", "/api/devices/"+bad.ID()+"/tools/"+c.tool+"/call",
					map[string]any{"arguments": json.RawMessage(c.args), "timeoutMs": 20000})
				mu.Lock()
				defer mu.Unlock()
				record(body)
				if st != 200 || !strings.Contains(fmt.Sprint(body["content"]), "called") {
					t.Errorf("%s: %d %v", c.tool, st, body)
				}
			})
		}
	}
	wg.Go(func() {
		st, body := h.call("POST", "/api/devices/"+good.ID()+"/tools/self.audio_speaker.set_volume/call",
			map[string]any{"arguments": map[string]any{"volume": 7}})
		if st != 200 {
			t.Errorf("the good device's call: %d %v", st, body)
		}
	})
	wg.Wait()
	if st, _ := h.call("GET", "/healthz", nil); st != 200 {
		t.Errorf("healthz: %d", st)
	}
	_, body := h.call("GET", "/api/devices/"+bad.ID()+"/tools", nil)
	record(body)
	_, body = h.call("GET", "/api/calls?device="+bad.ID(), nil)
	record(body)
	if strings.Contains(seen.String(), secret) {
		t.Errorf("the content of a file a device named reached an API response")
	}
}
