package server_test

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/xiaozhi-hub/hub/catalog"
	"github.com/xiaozhi-hub/hub/server"
)

// readmeDemoRequests returns the rows of README.md's "you say | device"
// table: each request and the one device that should answer it.
func readmeDemoRequests(t *testing.T) [][2]string {
	t.Helper()
	var rows [][2]string
	in := false
	row := regexp.MustCompile("^\\| (.+?) \\| `([0-9a-f:]+)` \\|$")
	for _, line := range readmeSection(t, "Set-up") {
		if strings.HasPrefix(line, "| you say | device |") {
			in = true
			continue
		}
		if in {
			if !strings.HasPrefix(line, "|") {
				break
			}
			if m := row.FindStringSubmatch(line); m != nil {
				rows = append(rows, [2]string{m[1], m[2]})
			}
		}
	}
	if len(rows) < 6 {
		t.Fatalf("README.md's Set-up has %d demo requests (a \"| you say | device |\" table); want at least 6", len(rows))
	}
	return rows
}

// Every request the README offers for the demo has exactly one right
// device, and the hub's device search (what its agent and /mcp clients use)
// ranks that device first, strictly ahead of the others.
func TestDemoHomeAnswersReadmeRequests(t *testing.T) {
	h := startHub(t, "", nil)
	startDemo(t, h, 4)
	for _, id := range []string{"de:00:00:00:00:01", "de:00:00:00:00:02", "de:00:00:00:00:04"} {
		h.readyTools(id)
	}
	waitFor(t, "the legacy device's IoT things", func() bool {
		_, body := h.call("GET", "/api/devices/de:00:00:00:00:03", nil)
		n, _ := body["thingCount"].(float64)
		return n == 4
	})
	cat := catalog.New(h.Registry, catalog.Options{})
	defer cat.Close()
	names := map[string]bool{}
	_, body := h.call("GET", "/api/devices", nil)
	for _, d := range body["devices"].([]any) {
		m := d.(map[string]any)
		if names[m["name"].(string)] {
			t.Errorf("two demo devices are named %q", m["name"])
		}
		names[m["name"].(string)] = true
	}
	for _, r := range readmeDemoRequests(t) {
		query, want := r[0], r[1]
		res := cat.Search(context.Background(), query, 4).Results
		if len(res) == 0 {
			t.Errorf("%q: nothing found, want %s", query, want)
			continue
		}
		if res[0].ID != want {
			t.Errorf("%q: first is %s %q (%v), want %s", query, res[0].ID, res[0].Name, res[0].Matched, want)
			continue
		}
		if len(res) > 1 && res[1].Score >= res[0].Score {
			t.Errorf("%q: %s and %s rank equal (%.2f): the request is ambiguous in the demo home", query, res[0].ID, res[1].ID, res[0].Score)
		}
	}
}

// With MQTT on, the demo home has devices on both transports, all online
// and controllable.
func TestDemoWithMQTT(t *testing.T) {
	h := mqttHub(t, "", func(c *server.Config) { c.DeviceAuth = "activation" })
	startDemo(t, h, 4)
	seen := map[string]int{}
	waitFor(t, "four demo devices online over both transports", func() bool {
		_, body := h.call("GET", "/api/devices", nil)
		clear(seen)
		for _, d := range body["devices"].([]any) {
			if m := d.(map[string]any); m["online"] == true {
				seen[m["transport"].(string)]++
			}
		}
		return seen["websocket"] == 2 && seen["mqtt"] == 2
	})
}
