package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/api"
	"github.com/xiaozhi-hub/hub/metrics"
	"github.com/xiaozhi-hub/hub/registry"
	"github.com/xiaozhi-hub/hub/registry/registrytest"
	"github.com/xiaozhi-hub/hub/store"
)

// TestMain fails the package if any goroutine (an event stream handler, a
// subscription, a store or registry worker) outlives the tests.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const token = "s3cret-admin-token"

// testHub is a real registry over a real SQLite store, served by the API on
// a real socket.
type testHub struct {
	t   *testing.T
	reg *registry.Registry
	srv *httptest.Server
}

type hubOptions struct {
	noMetrics bool
	ready     func() error
	wrap      func(http.Handler) http.Handler
}

func newHub(t *testing.T, o hubOptions) *testHub {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "hub.db"), store.Options{})
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() {
		if err := st.Close(); err != nil {
			t.Errorf("close store: %v", err)
		}
	})
	var m *metrics.Metrics
	if !o.noMetrics {
		m = metrics.New()
	}
	reg := registry.New(st, registry.Options{Metrics: m})
	if err := reg.Load(ctx); err != nil {
		t.Fatalf("load registry: %v", err)
	}
	mux := http.NewServeMux()
	api.New(api.Options{Registry: reg, Token: token, Metrics: m, Ready: o.ready}).Register(mux)
	var h http.Handler = mux
	if o.wrap != nil {
		h = o.wrap(mux)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	t.Cleanup(reg.Close) // first: ends event streams, flushes records
	return &testHub{t: t, reg: reg, srv: srv}
}

// response is what a test looks at: status, headers and the decoded body.
type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) json(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("response body is not the expected JSON: %v\n%s", err, r.body)
	}
}

// apiError decodes the error JSON shape {"error":{"code","message"}}.
func (r response) apiError(t *testing.T) (code, msg string) {
	t.Helper()
	var e struct {
		Error *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	r.json(t, &e)
	if e.Error == nil || e.Error.Code == "" || e.Error.Message == "" {
		t.Fatalf("want an error body {\"error\":{\"code\",\"message\"}}, got %s", r.body)
	}
	return e.Error.Code, e.Error.Message
}

// wantError checks status, code and that the message contains each of parts.
func (r response) wantError(t *testing.T, status int, code string, parts ...string) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d; body %s", r.status, status, r.body)
	}
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("Content-Type %q, want application/json", ct)
	}
	gotCode, msg := r.apiError(t)
	if gotCode != code {
		t.Errorf("error code %q, want %q (message %q)", gotCode, code, msg)
	}
	for _, p := range parts {
		if !strings.Contains(msg, p) {
			t.Errorf("error message %q does not mention %q", msg, p)
		}
	}
}

// do sends a request with the admin token.
func (h *testHub) do(method, path, body string) response {
	h.t.Helper()
	return h.doAuth(method, path, body, "Bearer "+token)
}

func (h *testHub) doAuth(method, path, body, authorization string) response {
	h.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, h.srv.URL+path, rd)
	if err != nil {
		h.t.Fatal(err)
	}
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := h.srv.Client().Do(req)
	if err != nil {
		h.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		h.t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: bytes.TrimSpace(b)}
}

// connect registers an online device with the given tools.
// The device's end is the registry's shared fake connection: tools with a
// scripted answer give it, other tools echo their arguments.
func (h *testHub) connect(id string, tools ...hub.Tool) (*registry.Link, *registrytest.Conn) {
	h.t.Helper()
	d := registrytest.Connect(h.t, h.reg, registry.ConnectInfo{DeviceID: id, ClientID: "client-" + id, ProtocolVersion: 1, MCP: true}, tools...)
	return d.Link, d.Conn
}

// volumeTool has a schema the hub validates arguments against.
var volumeTool = hub.Tool{
	Name:        "self.audio_speaker.set_volume",
	Description: "Set the volume of the audio speaker.",
	InputSchema: json.RawMessage(`{"type":"object","properties":{"volume":{"type":"integer","minimum":0,"maximum":100}},"required":["volume"]}`),
}

var statusTool = hub.Tool{
	Name:        "self.get_device_status",
	Description: "Get the device status.",
	InputSchema: json.RawMessage(`{"type":"object","properties":{}}`),
}

var rebootTool = hub.Tool{
	Name:        "self.reboot",
	Description: "Reboot the device.",
	InputSchema: json.RawMessage(`{"type":"object","properties":{}}`),
	Annotations: json.RawMessage(`{"audience":["user"]}`),
	UserOnly:    true,
}
