package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/xiaozhi-hub/hub"
)

// streamHub is a hub whose event-stream handlers report when they return.
func streamHub(t *testing.T) (*testHub, <-chan struct{}) {
	returned := make(chan struct{}, 16)
	h := newHub(t, hubOptions{wrap: func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/api/events" {
				defer func() { returned <- struct{}{} }()
			}
			next.ServeHTTP(w, r)
		})
	}})
	return h, returned
}

// openStream starts GET /api/events; the subscription exists once it returns.
func (h *testHub) openStream(ctx context.Context, query string) (*http.Response, *sseReader) {
	h.t.Helper()
	req, err := http.NewRequestWithContext(ctx, "GET", h.srv.URL+"/api/events"+query, nil)
	if err != nil {
		h.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := h.srv.Client().Do(req)
	if err != nil {
		h.t.Fatalf("GET /api/events: %v", err)
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		h.t.Fatalf("GET /api/events: status %d: %s", resp.StatusCode, b)
	}
	return resp, &sseReader{r: bufio.NewReader(resp.Body)}
}

type sseEvent struct{ event, id, data string }

type sseReader struct{ r *bufio.Reader }

// next returns the next event, skipping comments.
func (s *sseReader) next() (sseEvent, error) {
	var ev sseEvent
	var seen bool
	for {
		line, err := s.r.ReadString('\n')
		if err != nil {
			return ev, err
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "":
			if seen {
				return ev, nil
			}
		case strings.HasPrefix(line, ":"):
		default:
			field, value, _ := strings.Cut(line, ":")
			value = strings.TrimPrefix(value, " ")
			seen = true
			switch field {
			case "event":
				ev.event = value
			case "id":
				ev.id = value
			case "data":
				ev.data += value
			}
		}
	}
}

func TestEventStream(t *testing.T) {
	h, returned := streamHub(t)
	h.connect("dev-1")
	h.connect("dev-2")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	resp, stream := h.openStream(ctx, "?device=dev-1")
	defer resp.Body.Close()
	for k, want := range map[string]string{"Content-Type": "text/event-stream", "Cache-Control": "no-cache", "X-Accel-Buffering": "no"} {
		if got := resp.Header.Get(k); got != want {
			t.Errorf("%s: %q, want %q", k, got, want)
		}
	}

	// An event of another device is filtered out; this device's arrives.
	for _, p := range []struct{ id, body string }{{"dev-2", `{"name":"Fan"}`}, {"dev-1", `{"name":"Lamp","room":"Study"}`}} {
		if r := h.do("PATCH", "/api/devices/"+p.id, p.body); r.status != http.StatusOK {
			t.Fatalf("PATCH %s: %d %s", p.id, r.status, r.body)
		}
	}
	ev, err := stream.next()
	if err != nil {
		t.Fatalf("reading the stream: %v", err)
	}
	if ev.event != hub.EventDeviceUpdated || ev.id != "1" {
		t.Errorf("event %q id %q, want device_updated id 1", ev.event, ev.id)
	}
	var got struct {
		Type     string     `json:"type"`
		DeviceID string     `json:"deviceId"`
		Data     hub.Device `json:"data"`
	}
	if err := json.Unmarshal([]byte(ev.data), &got); err != nil {
		t.Fatalf("event data is not JSON: %v: %s", err, ev.data)
	}
	if got.Type != hub.EventDeviceUpdated || got.DeviceID != "dev-1" || got.Data.Name != "Lamp" || got.Data.Room != "Study" {
		t.Errorf("event data %s", ev.data)
	}

	// Ids count up per stream.
	if r := h.do("DELETE", "/api/devices/dev-1", ""); r.status != http.StatusNoContent {
		t.Fatalf("DELETE: %d %s", r.status, r.body)
	}
	if ev, err = stream.next(); err != nil || ev.event != hub.EventDeviceDeleted || ev.id != "2" {
		t.Errorf("second event %+v (%v), want device_deleted id 2", ev, err)
	}

	// The client goes away: the handler returns and unsubscribes.
	cancel()
	resp.Body.Close()
	<-returned
}

func TestEventStreamEndsWhenRegistryCloses(t *testing.T) {
	h, returned := streamHub(t)
	resp, stream := h.openStream(context.Background(), "")
	defer resp.Body.Close()

	h.connect("dev-1")
	if ev, err := stream.next(); err != nil || ev.event != hub.EventOnline {
		t.Fatalf("first event %+v (%v), want online", ev, err)
	}
	h.reg.Close()
	<-returned
	// The response ends cleanly, rather than being cut off.
	for {
		if _, err := stream.next(); err != nil {
			if err != io.EOF {
				t.Errorf("stream ended with %v, want EOF", err)
			}
			break
		}
	}
}
