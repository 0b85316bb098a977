package server_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/xiaozhi-hub/hub/server"
)

// otaFrom makes an OTA check that a proxy says came from xff, and returns
// the status.
func otaFrom(t *testing.T, h *testHub, xff string) int {
	t.Helper()
	req, _ := http.NewRequest("POST", h.OTAURL(), strings.NewReader(`{"application":{"version":"2.4.2"}}`))
	req.Header.Set("Device-Id", "aa:00:00:00:7e:01")
	req.Header.Set("Client-Id", "uuid-7e-01")
	if xff != "" {
		req.Header.Set("X-Forwarded-For", xff)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}

// Behind a trusted proxy each device has its own OTA rate limit (the
// address the proxy forwarded); from anyone else, X-Forwarded-For is not
// believed, so it cannot be used to escape the limit.
func TestTrustedProxiesForwardTheClientsAddress(t *testing.T) {
	// exhaust makes OTA checks from xff until one is refused (at most 100).
	exhaust := func(h *testHub, xff string) int {
		st := 200
		for i := 0; i < 100 && st == 200; i++ {
			st = otaFrom(t, h, xff)
		}
		return st
	}
	behind := startHub(t, "", func(c *server.Config) { c.TrustedProxies = []string{"127.0.0.1"} })
	if st := exhaust(behind, "203.0.113.5"); st != 429 {
		t.Fatalf("100 OTA checks from one address behind the proxy: last %d; want 429 once over the limit", st)
	}
	if st := otaFrom(t, behind, "203.0.113.6"); st != 200 {
		t.Fatalf("another device behind the same proxy = %d; want 200 (its own limit)", st)
	}
	// A chain through a second trusted hop still names the client.
	if st := otaFrom(t, behind, "203.0.113.5, 127.0.0.1"); st != 429 {
		t.Fatalf("the limited device through two proxies = %d; want 429", st)
	}

	direct := startHub(t, "", nil) // trusts no proxy
	if st := exhaust(direct, "203.0.113.5"); st != 429 {
		t.Fatalf("100 OTA checks from one address: last %d; want 429", st)
	}
	if st := otaFrom(t, direct, "198.51.100.77"); st != 429 {
		t.Fatalf("a forged X-Forwarded-For escaped the limit of a hub that trusts no proxy: %d", st)
	}
}

// checkFrom makes the OTA check of device id, from 127.0.0.1, and returns
// the status and body.
func checkFrom(t *testing.T, h *testHub, id string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", h.OTAURL(), strings.NewReader(`{"application":{"version":"2.4.2"}}`))
	req.Header.Set("Device-Id", id)
	req.Header.Set("Client-Id", "uuid-"+id)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// The per-address limits are settings: a fleet behind one NAT (a school,
// an office) raises them, and the refusal names the one to raise.
func TestOTALimitsPerAddressAreSettings(t *testing.T) {
	h := startHub(t, "", func(c *server.Config) {
		c.DeviceAuth = "activation"
		c.OTAChecksPerMinute, c.OTABurst, c.ActivationCodesPerAddress = 60000, 200, 2
	})
	for _, id := range []string{"aa:00:00:00:7f:01", "aa:00:00:00:7f:02"} {
		if st, body := checkFrom(t, h, id); st != 200 || !strings.Contains(body, `"activation"`) {
			t.Fatalf("OTA check of %s = %d %s; want an activation code", id, st, body)
		}
	}
	st, body := checkFrom(t, h, "aa:00:00:00:7f:03")
	if st != 503 || !strings.Contains(body, "activation-codes-per-address") {
		t.Fatalf("a third device at the address with activation-codes-per-address 2 = %d %s; want 503 naming the setting", st, body)
	}
	for i := range 100 { // the default (bursts of 30) refuses from about the 31st
		if st, body := checkFrom(t, h, "aa:00:00:00:7f:01"); st != 200 {
			t.Fatalf("OTA check %d from one address with ota-burst 200 = %d %s", i+1, st, body)
		}
	}
}
