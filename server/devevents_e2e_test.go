package server_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// metric reads one sample from the hub's /metrics (0 if absent).
func (h *testHub) metric(t *testing.T, sample string) float64 {
	t.Helper()
	res, err := http.Get(h.URL() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(sample) + ` (\S+)$`).FindSubmatch(body)
	if m == nil {
		return 0
	}
	v, _ := strconv.ParseFloat(string(m[1]), 64)
	return v
}

// TestChattyDeviceIsBounded: a device that sends large unknown messages as
// fast as the connection allows has them recorded truncated (type kept,
// marked), and beyond its event rate not at all (counted in /metrics);
// another device's events are still there.
func TestChattyDeviceIsBounded(t *testing.T) {
	h := startHub(t, "", nil)
	check := bystander(t, h)
	h.waitEvent("aa:00:00:00:0b:ff", "online")
	const id = "aa:00:00:00:0b:04"
	c := h.rawDevice(id)
	const big, small = 10, 290 // within the connection's frame burst: it stays open
	for i := range big {
		send(t, c, fmt.Sprintf(`{"type":"bigthing","n":%d,"blob":"%s"}`, i, strings.Repeat("x", 200<<10)))
	}
	for i := range small {
		send(t, c, fmt.Sprintf(`{"type":"chatter","n":%d}`, i))
	}

	// Every message is either recorded or counted as dropped.
	var events []struct {
		Type string
		Data json.RawMessage
	}
	dropped := `xiaozhi_hub_device_events_limited_total{action="dropped"}`
	waitFor(t, "every message recorded or counted", func() bool {
		_, body := h.call("GET", "/api/devices/"+id+"/events?limit=1000", nil)
		raw, _ := json.Marshal(body["events"])
		events = nil
		json.Unmarshal(raw, &events)
		n := 0
		for _, e := range events {
			if e.Type == "device_message" {
				n++
			}
		}
		return n+int(h.metric(t, dropped)) == big+small
	})
	if d := h.metric(t, dropped); d == 0 {
		t.Errorf("all %d messages were recorded: no per-device event rate", big+small)
	}
	var truncated, bytes int
	for _, e := range events {
		bytes += len(e.Data)
		var d struct {
			Type      string
			Truncated bool
		}
		json.Unmarshal(e.Data, &d)
		if d.Type == "bigthing" {
			if !d.Truncated || len(e.Data) > 8<<10 {
				t.Errorf("a 200 KiB message was recorded as %d bytes, truncated=%v", len(e.Data), d.Truncated)
			}
			truncated++
		}
	}
	if truncated != big {
		t.Errorf("%d of the %d large messages recorded (truncated), want all: they came first", truncated, big)
	}
	if bytes > 1<<20 {
		t.Errorf("the device's events hold %d bytes", bytes)
	}
	if n := h.metric(t, `xiaozhi_hub_device_events_limited_total{action="truncated"}`); n != big {
		t.Errorf("truncated counter %v, want %d", n, big)
	}
	h.waitEvent("aa:00:00:00:0b:ff", "online")
	check()
}
