package server_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/xiaozhi-hub/hub/server"
)

const pageOrigin = "http://test-page.example:8006"

// preflight sends the OPTIONS request a browser sends before a
// cross-origin request with custom headers.
func preflight(t *testing.T, url, method, headers string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodOptions, url, nil)
	req.Header.Set("Origin", pageOrigin)
	req.Header.Set("Access-Control-Request-Method", method)
	req.Header.Set("Access-Control-Request-Headers", headers)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("OPTIONS %s: %v", url, err)
	}
	res.Body.Close()
	return res
}

// allows reports whether a preflight answer lets the page send every one
// of the requested headers (compared case-insensitively, as browsers do).
func allows(res *http.Response, requested string) bool {
	allowed := map[string]bool{}
	for _, h := range strings.Split(res.Header.Get("Access-Control-Allow-Headers"), ",") {
		allowed[strings.ToLower(strings.TrimSpace(h))] = true
	}
	for _, h := range strings.Split(requested, ",") {
		if !allowed[strings.ToLower(strings.TrimSpace(h))] {
			return false
		}
	}
	return true
}

// A web page on another origin (xinnan's test page, say) can make the OTA
// check and activation, and download firmware; it cannot read /api.
func TestBrowserPagesCanUseTheOTARoutes(t *testing.T) {
	h := startHub(t, "", nil)
	const headers = "device-id,client-id,content-type,activation-version,serial-number,accept-language,user-agent"
	for _, c := range []struct{ path, method string }{
		{"/xiaozhi/ota/", "POST"},
		{"/xiaozhi/ota/", "GET"},
		{"/xiaozhi/ota/activate", "POST"},
		{"/xiaozhi/ota/firmware/bread-compact-wifi/2.5.0.bin", "GET"},
	} {
		res := preflight(t, h.URL()+c.path, c.method, headers)
		if res.StatusCode/100 != 2 || res.Header.Get("Access-Control-Allow-Origin") == "" ||
			!strings.Contains(res.Header.Get("Access-Control-Allow-Methods"), c.method) || !allows(res, headers) {
			t.Errorf("preflight %s %s: %d %v; want 2xx allowing the origin, the method and the headers", c.method, c.path, res.StatusCode, res.Header)
		}
	}

	// The real request after the preflight: readable by the page.
	req, _ := http.NewRequest("POST", h.OTAURL(), strings.NewReader(`{"application":{"version":"2.0.0"}}`))
	req.Header.Set("Origin", pageOrigin)
	req.Header.Set("Device-Id", "aa:00:00:00:0c:01")
	req.Header.Set("Client-Id", "0d5a4c2e-1111-4222-8333-444455556666")
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || res.Header.Get("Access-Control-Allow-Origin") == "" {
		t.Fatalf("OTA check from a page: %d %v %s; want 200 with Access-Control-Allow-Origin", res.StatusCode, res.Header, body)
	}

	// The admin API stays closed to other origins.
	res = preflight(t, h.URL()+"/api/devices", "GET", "authorization")
	if res.Header.Get("Access-Control-Allow-Origin") != "" || res.Header.Get("Access-Control-Allow-Headers") != "" {
		t.Fatalf("preflight of /api/devices: %v; the admin API must not answer CORS", res.Header)
	}
}

// dialFrom opens the device WebSocket as a browser page on origin would.
func dialFrom(h *testHub, origin string) (*websocket.Conn, *http.Response, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	hdr := http.Header{"Origin": {origin}, "Device-Id": {"aa:00:00:00:0c:02"}, "Client-Id": {"page-client"}, "Protocol-Version": {"1"}}
	return websocket.Dial(ctx, h.DeviceURL(), &websocket.DialOptions{HTTPHeader: hdr})
}

// A page on another origin is refused with a body that names the setting
// that admits it; with the setting, it connects.
func TestWebSocketFromAnotherOriginSaysWhichSettingAdmitsIt(t *testing.T) {
	h := startHub(t, "", nil)
	c, res, err := dialFrom(h, pageOrigin)
	if err == nil {
		c.CloseNow()
		t.Fatal("a page on another origin connected without device-origins")
	}
	if res == nil {
		t.Fatalf("dial: %v (no HTTP answer)", err)
	}
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusForbidden || !strings.Contains(string(body), "device-origins") ||
		!strings.Contains(string(body), "test-page.example:8006") {
		t.Fatalf("refused page: %d %s; want 403 naming device-origins and the page's host", res.StatusCode, body)
	}

	h2 := startHub(t, "", func(c *server.Config) { c.DeviceOrigins = []string{"test-page.example:*"} })
	c, _, err = dialFrom(h2, pageOrigin)
	if err != nil {
		t.Fatalf("page admitted by device-origins: %v", err)
	}
	c.CloseNow()
}
