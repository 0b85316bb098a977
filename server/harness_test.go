package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/xiaozhi-hub/hub/demo"
	"github.com/xiaozhi-hub/hub/server"
	"github.com/xiaozhi-hub/hub/server/servertest"
	"github.com/xiaozhi-hub/hub/sim"
)

// testHub is a real hub on a loopback port with its data in a temp dir.
type testHub struct {
	*server.Hub
	t    testing.TB
	dir  string
	stop func()
}

// startHub runs a hub with cfg adjusted by edit (in dir, or a fresh
// temporary directory), and stops it at cleanup.
func startHub(t testing.TB, dir string, edit func(*server.Config)) *testHub {
	t.Helper()
	h, stop := servertest.Start(t, func(c *server.Config) {
		if dir != "" {
			c.DataDir = dir
		}
		if edit != nil {
			edit(c)
		}
	})
	return &testHub{Hub: h, t: t, dir: h.Config().DataDir, stop: stop}
}

// call makes an API request with the admin token and decodes the JSON reply.
func (h *testHub) call(method, path string, body any) (int, map[string]any) {
	h.t.Helper()
	return h.callWith(h.Token, method, path, body)
}

func (h *testHub) callWith(token, method, path string, body any) (int, map[string]any) {
	h.t.Helper()
	return callURL(h.t, token, method, h.URL()+path, body)
}

// callURL makes an HTTP request and decodes the JSON reply.
func callURL(t testing.TB, token, method, url string, body ...any) (int, map[string]any) {
	t.Helper()
	var rd io.Reader
	if len(body) > 0 && body[0] != nil {
		b, err := json.Marshal(body[0])
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer res.Body.Close()
	var out map[string]any
	data, _ := io.ReadAll(res.Body)
	if len(data) > 0 && json.Unmarshal(data, &out) != nil {
		out = map[string]any{"raw": string(data)}
	}
	return res.StatusCode, out
}

// device starts a simulated device, with extra tools, against the hub; it
// is closed at cleanup.
func (h *testHub) device(cfg sim.Config, tools ...*sim.Tool) *sim.Device {
	h.t.Helper()
	cfg.URL = h.DeviceURL()
	d := sim.New(cfg)
	if err := d.AddTool(tools...); err != nil {
		h.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := d.Connect(ctx); err != nil {
		h.t.Fatalf("device %s connect: %v", cfg.DeviceID, err)
	}
	h.t.Cleanup(func() { d.Close() })
	return d
}

// waitFor polls cond until it holds, failing the test after 10 s.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	waitWithin(t, 10*time.Second, what, cond)
}

// waitWithin polls cond until it holds, failing the test after d.
func waitWithin(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// readyTools waits until the device's tool list is cached and fresh.
func (h *testHub) readyTools(id string) []any {
	h.t.Helper()
	var tools []any
	waitFor(h.t, "tools of "+id, func() bool {
		st, body := h.call("GET", "/api/devices/"+id+"/tools", nil)
		if st != 200 {
			return false
		}
		tools, _ = body["tools"].([]any)
		return body["stale"] == false && len(tools) > 0
	})
	return tools
}

func toolNames(tools []any) []string {
	var names []string
	for _, t := range tools {
		names = append(names, t.(map[string]any)["name"].(string))
	}
	return names
}

func errCode(body map[string]any) string {
	e, _ := body["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

func errMessage(body map[string]any) string {
	e, _ := body["error"].(map[string]any)
	m, _ := e["message"].(string)
	return m
}

// waitEvent waits until a recorded event of the device mentions text.
func (h *testHub) waitEvent(id, text string) {
	h.t.Helper()
	waitFor(h.t, "an event mentioning "+text, func() bool {
		_, evs := h.call("GET", "/api/devices/"+id+"/events?limit=100", nil)
		return strings.Contains(fmt.Sprint(evs), text)
	})
}

func asCloseError(err error, ce *websocket.CloseError) bool { return errors.As(err, ce) }

// startDemo runs n demo devices against h until the test ends.
func startDemo(t testing.TB, h *testHub, n int) {
	t.Helper()
	stop, err := demo.Start(context.Background(), h.Hub, n, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
}
