package server_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/xiaozhi-hub/hub/sim"
)

// The dashboard page is served without a token, carries no device data of
// its own, and forbids framing and foreign scripts.
func TestDashboardPage(t *testing.T) {
	h := startHub(t, "", nil)
	h.device(sim.Config{DeviceID: "aa:00:00:00:0e:01"})
	res, err := http.Get(h.URL() + "/")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("GET / = %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	if res.Header.Get("X-Frame-Options") != "DENY" || !strings.Contains(res.Header.Get("Content-Security-Policy"), "default-src 'self'") {
		t.Fatalf("headers: %v", res.Header)
	}
	page := string(body)
	if !strings.Contains(page, "/api/devices") || strings.Contains(page, "aa:00:00:00:0e:01") {
		t.Fatal("the page must read devices from the API, not carry them")
	}
	if strings.Contains(page, "innerHTML") {
		t.Fatal("device-provided text must never be parsed as HTML")
	}
	// Only the page itself is open: unknown paths are not the dashboard.
	res2, _ := http.Get(h.URL() + "/anything")
	res2.Body.Close()
	if res2.StatusCode != 404 {
		t.Fatalf("GET /anything = %d", res2.StatusCode)
	}
}
