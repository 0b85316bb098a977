package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/api"
)

// fakeTrust answers every method with err (nil: success).
type fakeTrust struct{ err error }

func (f fakeTrust) Policy() string { return "activation" }
func (f fakeTrust) Pending() []hub.Activation {
	return []hub.Activation{{Code: "123456", DeviceID: "aa:00:00:00:00:01"}}
}
func (f fakeTrust) Admitted(string) bool { return true }
func (f fakeTrust) Approve(context.Context, string, hub.DevicePatch) (hub.Activation, hub.Trust, error) {
	return hub.Activation{}, hub.Trust{}, f.err
}
func (f fakeTrust) TrustOf(_ context.Context, id string) (hub.Trust, error) {
	return hub.Trust{DeviceID: id}, f.err
}
func (f fakeTrust) Revoke(_ context.Context, id string) (hub.Trust, error) {
	return hub.Trust{DeviceID: id}, f.err
}
func (f fakeTrust) Rebind(_ context.Context, id, _, _ string) (hub.Trust, error) {
	return hub.Trust{DeviceID: id}, f.err
}
func (f fakeTrust) SetTransport(_ context.Context, id, _ string) (hub.Trust, error) {
	return hub.Trust{DeviceID: id}, f.err
}

// withTrust serves h's registry and t on a server of their own.
func withTrust(h *testHub, t api.Trust) *testHub {
	mux := http.NewServeMux()
	api.New(api.Options{Registry: h.reg, Token: token, Trust: t}).Register(mux)
	srv := httptest.NewServer(mux)
	h.t.Cleanup(srv.Close)
	return &testHub{t: h.t, reg: h.reg, srv: srv}
}

// The device-trust routes answer errors by the API's one table: a timeout
// is 504 and a device that is offline 409 (not 500, as the OTA package's
// own table once said), internals stay hidden, and a code that is not
// found gets the route that lists the pending ones.
func TestTrustRoutesUseTheAPITable(t *testing.T) {
	base := newHub(t, hubOptions{})
	for _, c := range []struct {
		err    error
		status int
		code   string
		msg    string
	}{
		{hub.Errorf(hub.ETIMEOUT, "the store did not answer"), 504, "timeout", "did not answer"},
		{hub.Errorf(hub.EOFFLINE, "device is offline"), 409, "device_offline", "offline"},
		{hub.Errorf(hub.EDEVICE, "device said no"), 502, "device_error", "said no"},
		{fmt.Errorf("revoke: %w", context.DeadlineExceeded), 504, "timeout", "timed out"},
		{errors.New("disk I/O error at /secret/path"), 500, "internal", "internal error"},
	} {
		h := withTrust(base, fakeTrust{err: c.err})
		h.do("POST", "/api/devices/aa:00:00:00:00:01/token/revoke", "").wantError(t, c.status, c.code, c.msg)
	}
	h := withTrust(base, fakeTrust{err: hub.Errorf(hub.ENOTFOUND, "no device is waiting with code \"1\"")})
	h.do("POST", "/api/activations/1/approve", "").wantError(t, 404, "not_found", "GET /api/activations lists the pending codes")
	h.do("POST", "/api/activations/1/approve", `{"nmae":"x"}`).wantError(t, 400, "bad_request", `"nmae"`)
	h.do("POST", "/api/devices/aa:00:00:00:00:01/rebind", `{"clientId":7}`).wantError(t, 400, "bad_request", "clientId")
	if r := h.do("GET", "/api/activations", ""); r.status != 200 {
		t.Fatalf("activations: %d %s", r.status, r.body)
	}
}

// A device the hub knows that never made an OTA check here (a demo
// device; one connected under device-auth open) has the empty trust
// record, so the dashboard's device panel asks for it without an error;
// an unknown device is still 404.
func TestTrustOfAKnownDeviceWithoutARecord(t *testing.T) {
	base := newHub(t, hubOptions{})
	base.connect("de:00:00:00:00:01")
	h := withTrust(base, fakeTrust{err: hub.Errorf(hub.ENOTFOUND, "the hub has no trust record for this device")})
	r := h.do("GET", "/api/devices/de:00:00:00:00:01/trust", "")
	if r.status != 200 {
		t.Fatalf("trust of a known device without a record: %d %s", r.status, r.body)
	}
	var tr struct {
		DeviceID  string `json:"deviceId"`
		Transport string `json:"transport"`
		Approved  string `json:"approved"`
	}
	if err := json.Unmarshal([]byte(r.body), &tr); err != nil || tr.DeviceID != "de:00:00:00:00:01" || tr.Transport != "" || tr.Approved != "" {
		t.Errorf("trust of a known device without a record: %s (%v)", r.body, err)
	}
	h.do("GET", "/api/devices/de:00:00:00:00:99/trust", "").wantError(t, 404, "not_found", "no trust record")
}
