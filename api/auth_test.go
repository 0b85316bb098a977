package api_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/xiaozhi-hub/hub/api"
)

// Every /api route, with a body where it takes one. Requests without the
// right token must never reach a handler, whether the route, the device or
// the method exists or not.
var apiRoutes = []struct{ method, path, body string }{
	{"GET", "/api/devices", ""},
	{"GET", "/api/devices?online=true", ""},
	{"GET", "/api/devices/dev-1", ""},
	{"PATCH", "/api/devices/dev-1", `{"name":"pwned"}`},
	{"DELETE", "/api/devices/dev-1", ""},
	{"GET", "/api/devices/dev-1/tools", ""},
	{"POST", "/api/devices/dev-1/tools/self.get_device_status/call", `{"arguments":{}}`},
	{"GET", "/api/devices/dev-1/iot", ""},
	{"POST", "/api/devices/dev-1/iot/commands", `{"commands":[{"name":"Lamp","method":"TurnOn"}]}`},
	{"GET", "/api/devices/dev-1/events", ""},
	{"GET", "/api/calls", ""},
	{"GET", "/api/events", ""},
	{"GET", "/api/no-such-thing", ""},
	{"PUT", "/api/devices/dev-1", `{}`},
}

func TestAPIRequiresToken(t *testing.T) {
	h := newHub(t, hubOptions{})
	_, conn := h.connect("dev-1", statusTool)

	auths := []struct{ name, header string }{
		{"no header", ""},
		{"wrong token", "Bearer not-the-token"},
		{"token prefix", "Bearer " + token[:len(token)-1]},
		{"token with suffix", "Bearer " + token + "x"},
		{"empty bearer", "Bearer "},
		{"basic scheme", "Basic " + token},
		{"bare token", token},
	}
	for _, rt := range apiRoutes {
		for _, a := range auths {
			t.Run(rt.method+" "+rt.path+"/"+a.name, func(t *testing.T) {
				r := h.doAuth(rt.method, rt.path, rt.body, a.header)
				r.wantError(t, http.StatusUnauthorized, "unauthorized")
				if c := r.header.Get("WWW-Authenticate"); !strings.HasPrefix(c, "Bearer") {
					t.Errorf("WWW-Authenticate %q, want a Bearer challenge", c)
				}
			})
		}
	}

	// Nothing got through: the device is untouched and was never called.
	d := h.do("GET", "/api/devices/dev-1", "")
	if d.status != http.StatusOK || strings.Contains(string(d.body), "pwned") {
		t.Errorf("device changed by unauthenticated requests: %d %s", d.status, d.body)
	}
	if n := len(conn.Calls()); n != 0 {
		t.Errorf("the device was called %d times by unauthenticated requests", n)
	}
}

func TestTokenSchemeIsCaseInsensitive(t *testing.T) {
	h := newHub(t, hubOptions{})
	if r := h.doAuth("GET", "/api/devices", "", "bearer "+token); r.status != http.StatusOK {
		t.Fatalf("lower-case scheme: status %d, want 200: %s", r.status, r.body)
	}
}

func TestHealthAndMetricsNeedNoToken(t *testing.T) {
	h := newHub(t, hubOptions{})
	h.connect("dev-1")

	r := h.doAuth("GET", "/healthz", "", "")
	if r.status != http.StatusOK {
		t.Fatalf("/healthz: status %d, want 200: %s", r.status, r.body)
	}
	var health struct {
		Status        string `json:"status"`
		DevicesOnline *int   `json:"devicesOnline"`
	}
	r.json(t, &health)
	if health.Status != "ok" || health.DevicesOnline == nil || *health.DevicesOnline != 1 {
		t.Errorf("/healthz = %s, want status ok and devicesOnline 1", r.body)
	}

	r = h.doAuth("GET", "/metrics", "", "")
	if r.status != http.StatusOK {
		t.Fatalf("/metrics: status %d, want 200: %s", r.status, r.body)
	}
	if !strings.Contains(string(r.body), "xiaozhi_hub_calls_total") && !strings.Contains(string(r.body), "xiaozhi_hub_devices_connected") {
		t.Errorf("/metrics does not show the hub's metrics:\n%.500s", r.body)
	}
	if strings.Contains(string(r.body), "dev-1") {
		t.Errorf("/metrics mentions a device id")
	}

	h.do("POST", "/healthz", "").wantError(t, http.StatusMethodNotAllowed, "bad_request", "POST")
}

// A scrape asks for gzip, as Prometheus does, and gets the page as it is:
// a gzip writer would hold about 1 MB of the hub's heap per scrape
// (BENCHMARKS.md, "Memory of a talking device").
func TestMetricsScrapeIsNotCompressed(t *testing.T) {
	h := newHub(t, hubOptions{})
	req, err := http.NewRequest("GET", h.srv.URL+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept-Encoding", "gzip") // set by hand, the client leaves the body as sent
	resp, err := h.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if enc := resp.Header.Get("Content-Encoding"); enc != "" || !strings.Contains(string(body), "# TYPE") {
		t.Fatalf("/metrics with Accept-Encoding gzip: Content-Encoding %q, body %.200q", enc, body)
	}
}

func TestHealthzNotReady(t *testing.T) {
	h := newHub(t, hubOptions{ready: func() error { return errString("store is migrating") }})
	r := h.doAuth("GET", "/healthz", "", "")
	if r.status != http.StatusServiceUnavailable {
		t.Fatalf("status %d, want 503: %s", r.status, r.body)
	}
	var health struct{ Status, Error string }
	r.json(t, &health)
	if health.Status == "ok" || !strings.Contains(health.Error, "store is migrating") {
		t.Errorf("/healthz = %s, want the readiness error", r.body)
	}
}

func TestMetricsDisabled(t *testing.T) {
	h := newHub(t, hubOptions{noMetrics: true})
	h.doAuth("GET", "/metrics", "", "").wantError(t, http.StatusNotFound, "not_found")
}

func TestEmptyTokenRefused(t *testing.T) {
	mustPanic(t, "New with an empty token", func() { api.New(api.Options{Registry: newHub(t, hubOptions{}).reg}) })
	mustPanic(t, "RequireToken with an empty token", func() { api.RequireToken("", http.NotFoundHandler()) })
}

func TestRequireTokenWrapsAnyHandler(t *testing.T) {
	h := api.RequireToken("tok", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusTeapot)
	}))
	for _, c := range []struct {
		auth string
		want int
	}{{"", 401}, {"Bearer tok2", 401}, {"Bearer tok", http.StatusTeapot}} {
		req := httptest.NewRequest("POST", "/mcp", nil)
		if c.auth != "" {
			req.Header.Set("Authorization", c.auth)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != c.want {
			t.Errorf("Authorization %q: status %d, want %d", c.auth, rec.Code, c.want)
		}
	}
}

func mustPanic(t *testing.T, what string, f func()) {
	t.Helper()
	defer func() {
		if recover() == nil {
			t.Errorf("%s did not panic", what)
		}
	}()
	f()
}

type errString string

func (e errString) Error() string { return string(e) }
