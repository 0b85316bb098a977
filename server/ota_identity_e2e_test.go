package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xiaozhi-hub/hub/server"
	"github.com/xiaozhi-hub/hub/sim"
)

// wsAs asks the device endpoint to admit id presenting clientID and token
// (the policy is checked before the upgrade).
func (h *testHub) wsAs(id, clientID, token string) (int, string) {
	h.t.Helper()
	req, _ := http.NewRequest("GET", h.URL()+"/xiaozhi/v1/", nil)
	req.Header.Set("Device-Id", id)
	req.Header.Set("Client-Id", clientID)
	req.Header.Set("Authorization", "Bearer "+token)
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

func wsToken(ans map[string]any) string {
	ws, _ := ans["websocket"].(map[string]any)
	tok, _ := ws["token"].(string)
	return tok
}

// fromAddr is an HTTP client whose connections come from local, another
// loopback address: a second machine on the LAN.
func fromAddr(local string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}, Timeout: 10 * time.Second}
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DialContext: d.DialContext, MaxIdleConnsPerHost: 4}}
}

// A stranger who knows an approved device's MAC address (it is no secret)
// gets no token for it, whatever Client-Id it sends; the device's own
// token does not admit it either; the admin sees the attempts.
func TestStrangerWithAnApprovedMACGetsNoToken(t *testing.T) {
	h := activationHub(t, "")
	d := h.approvedDevice(t, "ac:00:00:00:00:41")
	for _, client := range []string{"0f0f0f0f-1b2c-4d5e-8f90-0123456789ab", ""} {
		ans := checkAnswer(t, h.otaRequest("POST", "/xiaozhi/ota/", d.ID(), map[string]string{"Client-Id": client}, systemInfo))
		if tok := wsToken(ans); tok != "" {
			t.Fatalf("a stranger (Client-Id %q) with the device's MAC got its token %q", client, tok)
		}
		if ans["activation"] == nil {
			t.Fatalf("the stranger should get a code of its own, which nobody approves: %v", ans)
		}
	}
	if st, msg := h.wsAs(d.ID(), "0f0f0f0f-1b2c-4d5e-8f90-0123456789ab", d.Config().Token); st != 401 || !strings.Contains(msg, "Client-Id") {
		t.Fatalf("the device's token with another Client-Id: %d %q", st, msg)
	}
	if err := connect(t, d); err != nil {
		t.Fatalf("the device itself: %v", err)
	}
	// Events are recorded off the request path: poll for them.
	waitFor(t, "identity_refused in the device's events", func() bool {
		_, evs := h.call("GET", "/api/devices/"+d.ID()+"/events", nil)
		return strings.Count(fmt.Sprint(evs), "identity_refused") >= 3 // two checks, one connection
	})
}

// A device re-flashed (new Client-Id) shows a code; approving it binds the
// device to its new identity and the old identity's token stops working.
func TestReflashedDeviceIsReboundByApprovingItsCode(t *testing.T) {
	h := activationHub(t, "")
	old := h.approvedDevice(t, "ac:00:00:00:00:42")
	hook, codes := codeHook()
	d := h.otaDevice(sim.Config{DeviceID: old.ID(), ClientID: "11111111-2222-4333-8444-555555555555", OnActivation: hook})
	done := provisionAsync(t, d)
	code := codeShown(t, codes)
	_, list := h.call("GET", "/api/activations", nil)
	if !strings.Contains(fmt.Sprint(list), "rebind:true") {
		t.Fatalf("the pending list does not say the code re-binds a known device: %v", list)
	}
	approve(t, h, code)
	result(t, done)
	if err := connect(t, d); err != nil {
		t.Fatalf("the re-flashed device: %v", err)
	}
	if err := connect(t, old); err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("the old identity still connects: %v", err)
	}
}

// Under the token policy, a device that connected is bound: another
// identity with its MAC gets no token until the admin re-binds.
func TestTokenPolicyBindsAtFirstConnection(t *testing.T) {
	h := startHub(t, "", func(c *server.Config) { c.DeviceAuth = "token" })
	a := h.otaDevice(sim.Config{DeviceID: "ac:00:00:00:00:43"})
	if _, err := a.Provision(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := connect(t, a); err != nil {
		t.Fatal(err)
	}
	const stranger = "0f0f0f0f-1b2c-4d5e-8f90-0123456789ab"
	ans := checkAnswer(t, h.otaRequest("POST", "/xiaozhi/ota/", a.ID(), map[string]string{"Client-Id": stranger}, systemInfo))
	if tok := wsToken(ans); tok != "" {
		t.Fatalf("a stranger got a token for a bound device: %v", ans)
	}
	if st, body := h.call("POST", "/api/devices/"+a.ID()+"/rebind", map[string]string{"clientId": stranger}); st != 200 {
		t.Fatalf("rebind: %d %v", st, body)
	}
	ans = checkAnswer(t, h.otaRequest("POST", "/xiaozhi/ota/", a.ID(), map[string]string{"Client-Id": stranger}, systemInfo))
	if wsToken(ans) == "" {
		t.Fatalf("after the rebind the new identity gets no token: %v", ans)
	}
}

// 1,000 OTA checks with made-up ids from one machine cannot keep a real
// new device from being activated.
func TestActivationFloodCannotLockOutARealDevice(t *testing.T) {
	h := activationHub(t, "")
	flood := fromAddr("127.0.0.2")
	for i := range 1000 {
		req, _ := http.NewRequest("POST", h.OTAURL(), strings.NewReader("{}"))
		req.Header.Set("Device-Id", fmt.Sprintf("fe:00:00:00:%02x:%02x", i>>8, i&0xff))
		req.Header.Set("Client-Id", fmt.Sprint(i))
		res, err := flood.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
	}
	_, list := h.call("GET", "/api/activations", nil)
	if n := len(list["activations"].([]any)); n > 8 {
		t.Errorf("one address holds %d codes", n)
	}
	h.approvedDevice(t, "ac:00:00:00:00:44") // fails if the device gets 503
}

// OTA checks of devices that never connected store nothing (under token
// and open), whatever they send (20 new devices from each address: over
// the default new-devices-per-address, raised here).
func TestOTAChecksOfUnknownDevicesStoreNothing(t *testing.T) {
	h := startHub(t, "", func(c *server.Config) { c.DeviceAuth = "token"; c.NewDevicesPerAddress = 20 })
	before := dirSize(t, h.dir)
	big := `{"mac_address":"x","junk":"` + strings.Repeat("x", 60<<10) + `"}`
	for a := range 10 {
		c := fromAddr(fmt.Sprintf("127.0.1.%d", a+1))
		for i := range 20 {
			id := fmt.Sprintf("fd:00:00:00:%02x:%02x", a, i)
			req, _ := http.NewRequest("POST", h.OTAURL(), strings.NewReader(big))
			req.Header.Set("Device-Id", id)
			req.Header.Set("Client-Id", "c")
			res, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if res.StatusCode != 200 {
				t.Fatalf("check %s: %d", id, res.StatusCode)
			}
		}
	}
	if st, body := h.call("GET", "/api/devices/fd:00:00:00:00:01/trust", nil); st != 404 {
		t.Fatalf("a device that never connected has a trust record: %d (%d bytes of system info)", st, len(fmt.Sprint(body["systemInfo"])))
	}
	grown := dirSize(t, h.dir) - before
	t.Logf("200 checks with 60 KB bodies grew the data directory by %d bytes", grown)
	if grown > 2<<20 {
		t.Errorf("200 checks of unknown devices grew the data directory by %d bytes", grown)
	}
}

func dirSize(t *testing.T, dir string) int64 {
	var n int64
	_ = filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			n += fi.Size()
		}
		return nil
	})
	return n
}

// A browser client sends the MAC in upper case: it is the same device as
// the firmware's lower case, in the API too.
func TestMACCaseIsOneDevice(t *testing.T) {
	h := startHub(t, "", nil)
	d := h.device(sim.Config{DeviceID: "DE:00:00:00:0A:51"})
	for _, id := range []string{"de:00:00:00:0a:51", "DE:00:00:00:0A:51"} {
		st, dev := h.call("GET", "/api/devices/"+id, nil)
		if st != 200 || dev["id"] != "de:00:00:00:0a:51" || dev["online"] != true {
			t.Fatalf("GET /api/devices/%s: %d %v", id, st, dev)
		}
	}
	d.Close()
	waitFor(t, "offline", func() bool {
		_, dev := h.call("GET", "/api/devices/de:00:00:00:0a:51", nil)
		return dev["online"] == false
	})
	h.device(sim.Config{DeviceID: "de:00:00:00:0a:51"})
	_, all := h.call("GET", "/api/devices", nil)
	if n := len(all["devices"].([]any)); n != 1 {
		t.Fatalf("%d devices for one MAC in two cases: %v", n, all)
	}
}

// A flood of connections presenting an approved device's MAC with another
// Client-Id (no secret needed) is refused, but it cannot replace the
// device's event history or fill the log: identity refusals are reported
// at most 10 times per device (and per address), the rest counted, as on
// MQTT (TestMQTTBadLoginsDoNotReplaceEventHistory).
func TestIdentityRefusalsDoNotReplaceEventHistory(t *testing.T) {
	h := activationHub(t, "")
	d := h.approvedDevice(t, "ac:00:00:00:00:43")
	if err := connect(t, d); err != nil {
		t.Fatalf("the device itself: %v", err)
	}
	eventTypes := func() []string {
		_, body := h.call("GET", "/api/devices/"+d.ID()+"/events?limit=1000", nil)
		evs, _ := body["events"].([]any)
		var types []string
		for _, e := range evs {
			m, _ := e.(map[string]any)
			types = append(types, fmt.Sprint(m["type"]))
		}
		return types
	}
	waitFor(t, "the device's own events", func() bool { return len(eventTypes()) > 0 })
	before := eventTypes()

	const attempts = 300
	for i := range attempts {
		c := fromAddr(fmt.Sprintf("127.0.%d.%d", 40+i/200, 1+i%200))
		req, _ := http.NewRequest("GET", h.URL()+"/xiaozhi/v1/", nil)
		req.Header.Set("Device-Id", d.ID())
		req.Header.Set("Client-Id", fmt.Sprintf("0f0f0f0f-1b2c-4d5e-8f90-%012d", i))
		req.Header.Set("Authorization", "Bearer "+d.Config().Token)
		res, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != 401 {
			t.Fatalf("attempt %d with another Client-Id: %d, want 401", i, res.StatusCode)
		}
	}
	waitFor(t, "the unreported refusals counted", func() bool {
		return h.metric(t, "xiaozhi_hub_refusals_unreported_total") >= attempts-10
	})
	after := eventTypes()
	refused := strings.Count(strings.Join(after, " "), "identity_refused")
	if refused > 10 {
		t.Errorf("%d refusals recorded %d identity_refused events, want at most 10", attempts, refused)
	}
	for _, typ := range before {
		if !strings.Contains(strings.Join(after, " "), typ) {
			t.Errorf("event %s is gone after the flood: before %v, after %v", typ, before, after)
		}
	}
}
