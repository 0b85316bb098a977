package server_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/xiaozhi-hub/hub/server"
	"github.com/xiaozhi-hub/hub/sim"
)

// otaDevice is a simulated device that learns the hub from its OTA
// endpoint, polling /activate without the firmware's 3 s and 10 s waits.
func (h *testHub) otaDevice(cfg sim.Config) *sim.Device {
	cfg.OTAURL = h.OTAURL()
	cfg.ActivationPoll, cfg.ActivationRetry = 5*time.Millisecond, 5*time.Millisecond
	d := sim.New(cfg)
	h.t.Cleanup(func() { d.Close() })
	return d
}

type provisioned struct {
	p   sim.Provisioned
	err error
}

// provisionAsync runs d.Provision until it returns or the test ends, and
// returns the channel of its result.
func provisionAsync(t *testing.T, d *sim.Device) <-chan provisioned {
	done := make(chan provisioned, 1)
	finished := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		defer close(finished)
		p, err := d.Provision(ctx)
		done <- provisioned{p, err}
	}()
	t.Cleanup(func() { cancel(); <-finished })
	return done
}

// codeHook is an OnActivation hook and the channel of the codes shown.
func codeHook() (func(code, message string), <-chan string) {
	codes := make(chan string, 1)
	return func(code, _ string) {
		select {
		case codes <- code:
		default: // shown again; the test has it
		}
	}, codes
}

// codeShown waits for the device's OnActivation hook to report a code.
func codeShown(t *testing.T, codes <-chan string) string {
	t.Helper()
	select {
	case c := <-codes:
		return c
	case <-time.After(10 * time.Second):
		t.Fatal("the device showed no activation code")
		return ""
	}
}

func result(t *testing.T, done <-chan provisioned) sim.Provisioned {
	t.Helper()
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatalf("provision: %v", r.err)
		}
		return r.p
	case <-time.After(10 * time.Second):
		t.Fatal("provisioning did not finish")
		return sim.Provisioned{}
	}
}

// wsRefusal asks the device endpoint to admit id with token (a plain GET:
// the policy is checked before the upgrade) and returns the status and the
// error message.
func (h *testHub) wsRefusal(id, token string) (int, string) {
	h.t.Helper()
	req, _ := http.NewRequest("GET", h.URL()+"/xiaozhi/v1/", nil)
	req.Header.Set("Device-Id", id)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer res.Body.Close()
	var body map[string]any
	data, _ := io.ReadAll(res.Body)
	_ = json.Unmarshal(data, &body)
	return res.StatusCode, errMessage(body)
}

func connect(t *testing.T, d *sim.Device) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return d.Connect(ctx)
}

// approvedDevice takes a new device through activation and approval.
func (h *testHub) approvedDevice(t *testing.T, id string) *sim.Device {
	t.Helper()
	hook, codes := codeHook()
	d := h.otaDevice(sim.Config{DeviceID: id, OnActivation: hook})
	done := provisionAsync(t, d)
	code := codeShown(t, codes)
	if st, body := h.call("POST", "/api/activations/"+code+"/approve", nil); st != 200 {
		t.Fatalf("approve %s: %d %v", code, st, body)
	}
	result(t, done)
	return d
}

func activationHub(t *testing.T, dir string) *testHub {
	return startHub(t, dir, func(c *server.Config) { c.DeviceAuth = "activation" })
}

func TestUnknownDeviceIsActivatedThroughTheAPI(t *testing.T) {
	if server.DefaultConfig().DeviceAuth != "activation" {
		t.Fatal("a normally started hub must require activation")
	}
	dir := t.TempDir()
	h := activationHub(t, dir)
	const id = "ac:00:00:00:00:01"
	if err := connect(t, sim.New(sim.Config{URL: h.DeviceURL(), DeviceID: id})); err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("an unknown device connected: %v", err)
	}
	hook, codes := codeHook()
	d := h.otaDevice(sim.Config{DeviceID: id, Board: "esp-box-3", OnActivation: hook})
	done := provisionAsync(t, d)
	code := codeShown(t, codes)

	// Pending: refused on the WebSocket with a reason, listed for a person.
	if st, msg := h.wsRefusal(id, ""); st != 401 || !strings.Contains(msg, "not approved") || !strings.Contains(msg, "approve") {
		t.Fatalf("pending device: %d %q", st, msg)
	}
	st, body := h.call("GET", "/api/activations", nil)
	list, _ := body["activations"].([]any)
	if st != 200 || len(list) != 1 || list[0].(map[string]any)["code"] != code || list[0].(map[string]any)["deviceId"] != id ||
		list[0].(map[string]any)["board"] != "esp-box-3" {
		t.Fatalf("activations: %d %v", st, body)
	}
	if st, _ := h.callWith("", "GET", "/api/activations", nil); st != 401 {
		t.Fatalf("activations without the admin token: %d", st)
	}
	if st, _ := h.callWith("", "POST", "/api/activations/"+code+"/approve", nil); st != 401 {
		t.Fatalf("approval without the admin token: %d", st)
	}
	if st, body := h.call("POST", "/api/activations/000000x/approve", nil); st != 404 || errCode(body) != "not_found" {
		t.Fatalf("unknown code: %d %v", st, body)
	}

	st, body = h.call("POST", "/api/activations/"+code+"/approve", map[string]any{"name": "Desk lamp", "room": "office"})
	if st != 200 {
		t.Fatalf("approve: %d %v", st, body)
	}
	p := result(t, done)
	if p.Last.Activation != nil || p.Last.WebSocket == nil || p.Last.WebSocket.Token == "" || len(p.Codes) != 1 {
		t.Fatalf("after approval: %+v", p)
	}
	if err := connect(t, d); err != nil {
		t.Fatalf("approved device: %v", err)
	}
	h.readyTools(id)
	_, dev := h.call("GET", "/api/devices/"+id, nil)
	if dev["name"] != "Desk lamp" || dev["room"] != "office" {
		t.Fatalf("the approval's name and room: %v", dev)
	}
	st, trust := h.call("GET", "/api/devices/"+id+"/trust", nil)
	info, _ := trust["systemInfo"].(map[string]any)
	if st != 200 || trust["admitted"] != true || info["mac_address"] != id || trust["board"] != "esp-box-3" {
		t.Fatalf("trust record with system info: %d %v", st, trust)
	}
	if st, list := h.call("GET", "/api/activations", nil); st != 200 || len(list["activations"].([]any)) != 0 {
		t.Fatalf("the approved code is still pending: %v", list)
	}

	// The approval survives a restart, and so does the token.
	d.Close()
	h.stop()
	h2 := activationHub(t, dir)
	d3 := h2.otaDevice(sim.Config{DeviceID: id, Board: "esp-box-3"})
	p3, err := d3.Provision(context.Background())
	if err != nil || len(p3.Codes) != 0 || p3.Last.WebSocket.Token != p.Last.WebSocket.Token {
		t.Fatalf("after a restart: %+v %v", p3, err)
	}
	if err := connect(t, d3); err != nil {
		t.Fatalf("approved device after a restart: %v", err)
	}
}

func TestRevokedTokenIsRefused(t *testing.T) {
	h := activationHub(t, "")
	d := h.approvedDevice(t, "ac:00:00:00:00:02")
	old := d.Config().Token
	if err := connect(t, d); err != nil {
		t.Fatal(err)
	}
	d.Close()
	if st, body := h.call("DELETE", "/api/devices/"+d.ID()+"/token", nil); st != 200 || body["revoked"] == nil {
		t.Fatalf("revoke: %d %v", st, body)
	}
	if err := connect(t, d); err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("a revoked token was accepted: %v", err)
	}
	if st, msg := h.wsRefusal(d.ID(), old); st != 401 || !strings.Contains(msg, "revoked") {
		t.Fatalf("revoked device: %d %q", st, msg)
	}
	// The device must be approved again: its next check shows a code.
	r, err := d.CheckOTA(context.Background())
	if err != nil || r.Activation == nil || r.Activation.Code == "" || r.WebSocket.Token != "" {
		t.Fatalf("check after revocation: %+v %v", r, err)
	}
	if st, body := h.call("POST", "/api/devices/aa:00:00:00:99:99/token/revoke", nil); st != 404 {
		t.Fatalf("revoking an unknown device: %d %v", st, body)
	}
}

func TestTokenPolicy(t *testing.T) {
	h := startHub(t, "", func(c *server.Config) { c.DeviceAuth = "token"; c.DeviceTokens = []string{"kitchen-secret"} })
	a := h.otaDevice(sim.Config{DeviceID: "ac:00:00:00:00:03"})
	if _, err := a.Provision(context.Background()); err != nil {
		t.Fatal(err)
	}
	tokA := a.Config().Token
	if err := connect(t, a); err != nil {
		t.Fatalf("OTA-issued token: %v", err)
	}
	// Bound to the Device-Id: another device cannot use it.
	if st, msg := h.wsRefusal("ac:00:00:00:00:04", tokA); st != 401 || !strings.Contains(msg, "not accepted") {
		t.Fatalf("another device's token: %d %q", st, msg)
	}
	// Configured tokens work for any device.
	h.device(sim.Config{DeviceID: "ac:00:00:00:00:05", Token: "kitchen-secret"})
	// Revoked: the old token stops working, a new check issues a new one.
	a.Close()
	if st, _ := h.call("POST", "/api/devices/"+a.ID()+"/token/revoke", nil); st != 200 {
		t.Fatal("revoke failed")
	}
	if err := connect(t, a); err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("revoked token accepted: %v", err)
	}
	if _, err := a.Provision(context.Background()); err != nil || a.Config().Token == tokA {
		t.Fatalf("new token after revocation: %v", err)
	}
	if err := connect(t, a); err != nil {
		t.Fatalf("new token: %v", err)
	}
}

func TestConfiguredTokenWorksUnderActivation(t *testing.T) {
	h := startHub(t, "", func(c *server.Config) { c.DeviceAuth = "activation"; c.DeviceTokens = []string{"installer-secret"} })
	h.device(sim.Config{DeviceID: "ac:00:00:00:00:06", Token: "installer-secret"})
	if st, msg := h.wsRefusal("ac:00:00:00:00:07", "guess"); st != 401 || msg == "" {
		t.Fatalf("wrong token: %d %q", st, msg)
	}
}

// Boot (what xiaozhi-sim --ota runs) waits for approval, then serves.
func TestBootWaitsForApprovalThenServes(t *testing.T) {
	h := activationHub(t, "")
	hook, codes := codeHook()
	d := h.otaDevice(sim.Config{DeviceID: "ac:00:00:00:00:08", OnActivation: hook})
	ctx, cancel := context.WithCancel(context.Background())
	booted := make(chan error, 1)
	go func() { booted <- d.Boot(ctx) }()
	defer func() { cancel(); <-booted }()
	approve(t, h, codeShown(t, codes))
	h.readyTools(d.ID())
}

// Revoking a device's tokens, or deleting the device, also ends the
// connection it already has, and its old token no longer admits it.
func TestRevokeAndDeleteEndOpenConnections(t *testing.T) {
	h := activationHub(t, "")
	for _, how := range []struct{ method, path string }{
		{"POST", "/token/revoke"},
		{"DELETE", ""},
	} {
		d := h.approvedDevice(t, "ac:00:00:00:00:1"+strconv.Itoa(len(how.path)%10))
		if err := connect(t, d); err != nil {
			t.Fatal(err)
		}
		h.readyTools(d.ID())
		if st, body := h.call(how.method, "/api/devices/"+d.ID()+how.path, nil); st >= 300 {
			t.Fatalf("%s %s: %d %v", how.method, how.path, st, body)
		}
		waitFor(t, "the open connection to end", func() bool { return !d.Connected() })
		if err := connect(t, d); err == nil || !strings.Contains(err.Error(), "401") {
			t.Fatalf("after %s %s the old token still admits the device: %v", how.method, how.path, err)
		}
	}
}

// The system information a known device sends at its OTA check shows on
// its device record.
func TestOTACheckRecordsSystemInfo(t *testing.T) {
	h := activationHub(t, "")
	d := h.approvedDevice(t, "ac:00:00:00:00:21")
	if _, err := d.CheckOTA(context.Background()); err != nil {
		t.Fatal(err)
	}
	_, dev := h.call("GET", "/api/devices/"+d.ID(), nil)
	info, _ := dev["systemInfo"].(map[string]any)
	if info["mac_address"] != d.ID() {
		t.Fatalf("systemInfo on the device record = %v", dev["systemInfo"])
	}
}
