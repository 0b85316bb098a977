package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/xiaozhi-hub/hub"
)

// A device approved before it ever connected has no lastSeen: its
// device_updated event leaves the field out instead of sending year 1.
func TestDeviceUpdatedEventHasNoZeroTimes(t *testing.T) {
	h, _ := streamHub(t)
	name := "Kitchen speaker"
	if _, err := h.reg.Register(context.Background(), "dev-new", hub.DevicePatch{Name: &name}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	resp, stream := h.openStream(ctx, "?device=dev-new")
	defer resp.Body.Close()
	if r := h.do("PATCH", "/api/devices/dev-new", `{"room":"Kitchen"}`); r.status != http.StatusOK {
		t.Fatalf("PATCH: %d %s", r.status, r.body)
	}
	ev, err := stream.next()
	if err != nil || ev.event != hub.EventDeviceUpdated {
		t.Fatalf("event %+v (%v), want device_updated", ev, err)
	}
	if strings.Contains(ev.data, "0001-01-01") {
		t.Errorf("device_updated carries a zero time: %s", ev.data)
	}
	var got struct {
		Data map[string]any `json:"data"`
	}
	if err := json.Unmarshal([]byte(ev.data), &got); err != nil {
		t.Fatal(err)
	}
	// The full current device: what was set before and what just changed.
	if got.Data["name"] != name || got.Data["room"] != "Kitchen" || got.Data["firstSeen"] == nil {
		t.Errorf("device_updated data %s, want the whole current device", ev.data)
	}
}
