package server_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/xiaozhi-hub/hub/server"
	"github.com/xiaozhi-hub/hub/sim"
	"github.com/xiaozhi-hub/hub/store"
)

// otaCheckFrom makes the OTA check of id with clientID through client (a
// machine of its own) and returns the status, the token and the body.
func otaCheckFrom(t *testing.T, h *testHub, client *http.Client, id, clientID string) (int, string, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", h.OTAURL(), strings.NewReader(`{"application":{"version":"2.4.2"}}`))
	req.Header.Set("Device-Id", id)
	req.Header.Set("Client-Id", clientID)
	req.Header.Set("User-Agent", "bread-compact-wifi/2.4.2")
	res, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	tok := ""
	if i := strings.Index(string(data), `"token":"`); i >= 0 {
		tok, _, _ = strings.Cut(string(data[i+len(`"token":"`):]), `"`)
	}
	return res.StatusCode, tok, string(data)
}

// Under device-auth token, the OTA endpoint gives tokens to at most
// new-devices-per-address devices new to the hub from one address; a
// device the hub knows is never refused, another address is not affected,
// and the refusal names the setting.
func TestNewDevicesPerAddressIsAQuota(t *testing.T) {
	h := startHub(t, "", func(c *server.Config) {
		c.DeviceAuth = "token"
		c.OTAChecksPerMinute, c.OTABurst, c.NewDevicesPerAddress = 60000, 1000, 3
	})
	// A real device, known to the hub: it connected once.
	known := h.otaDevice(sim.Config{DeviceID: "ac:00:00:00:19:01"})
	if _, err := known.Provision(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := connect(t, known); err != nil {
		t.Fatal(err)
	}
	known.Close()

	nat := fromAddr("127.0.19.1")
	for i := range 3 {
		if st, tok, body := otaCheckFrom(t, h, nat, fmt.Sprintf("fe:19:00:00:00:%02x", i), "c"); st != 200 || tok == "" {
			t.Fatalf("new device %d of 3 from one address: %d %s", i+1, st, body)
		}
	}
	// The same device checking again (it rebooted before connecting) is
	// not counted again.
	if st, tok, body := otaCheckFrom(t, h, nat, "fe:19:00:00:00:00", "c"); st != 200 || tok == "" {
		t.Fatalf("a device checking twice: %d %s", st, body)
	}
	st, tok, body := otaCheckFrom(t, h, nat, "fe:19:00:00:00:99", "c")
	if st != 429 || tok != "" || !strings.Contains(body, "new-devices-per-address") {
		t.Fatalf("a 4th new device from the address with new-devices-per-address 3: %d %s; want 429 naming the setting", st, body)
	}
	// The known device behind the same NAT still gets its token.
	if st, tok, body := otaCheckFrom(t, h, nat, known.ID(), known.Config().ClientID); st != 200 || tok == "" {
		t.Fatalf("a known device from the address over its quota: %d %s", st, body)
	}
	if st, tok, body := otaCheckFrom(t, h, fromAddr("127.0.19.2"), "fe:19:00:00:01:00", "c"); st != 200 || tok == "" {
		t.Fatalf("a new device from another address: %d %s", st, body)
	}
}

// Under device-auth open, the WebSocket admits any device: a new device
// over its address's quota still gets its answer, without a token (which
// would also be its MQTT login).
func TestNewDevicesPerAddressUnderOpen(t *testing.T) {
	h := startHub(t, "", func(c *server.Config) {
		c.DeviceAuth = "open"
		c.OTAChecksPerMinute, c.OTABurst, c.NewDevicesPerAddress = 60000, 1000, 2
	})
	nat := fromAddr("127.0.19.3")
	for i := range 2 {
		if st, tok, body := otaCheckFrom(t, h, nat, fmt.Sprintf("fe:19:00:00:02:%02x", i), "c"); st != 200 || tok == "" {
			t.Fatalf("new device %d of 2: %d %s", i+1, st, body)
		}
	}
	st, tok, body := otaCheckFrom(t, h, nat, "fe:19:00:00:02:99", "c")
	if st != 200 || tok != "" || !strings.Contains(body, `"websocket"`) {
		t.Fatalf("a 3rd new device under open: %d %s; want the answer without a token", st, body)
	}
}

// strangerScale is the size of TestStrangerLoginsLeaveBoundedRecords:
// addresses and logins tried from each. XZH_STRANGERS=137x30 runs the
// attack of issue 19 (4,110 logins).
func strangerScale(t *testing.T) (addrs, each int) {
	addrs, each = 12, 8
	if s := os.Getenv("XZH_STRANGERS"); s != "" {
		a, e, _ := strings.Cut(s, "x")
		var err1, err2 error
		addrs, err1 = strconv.Atoi(a)
		each, err2 = strconv.Atoi(e)
		if err1 != nil || err2 != nil || addrs < 1 || addrs > 250 || each < 1 || each > 1000 {
			t.Fatalf("XZH_STRANGERS=%q: want <addresses>x<logins each>, at most 250x1000", s)
		}
	}
	return addrs, each
}

// strangerLogin is what the attack of issue 19 does with each token: a
// WebSocket connection with a hello, and nothing else (no MCP, no tools).
func strangerLogin(t *testing.T, h *testHub, id, token string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	hdr := http.Header{"Device-Id": {id}, "Client-Id": {"c"}, "Protocol-Version": {"1"}, "Authorization": {"Bearer " + token}}
	c, _, err := websocket.Dial(ctx, h.DeviceURL(), &websocket.DialOptions{HTTPHeader: hdr})
	if err != nil {
		t.Fatalf("stranger %s: %v", id, err)
	}
	defer c.CloseNow()
	send(t, c, `{"type":"hello","version":1,"transport":"websocket","audio_params":{"format":"opus","sample_rate":16000,"channels":1,"frame_duration":60}}`)
	if _, data, err := c.Read(ctx); err != nil || !strings.Contains(string(data), `"hello"`) {
		t.Fatalf("stranger %s: server hello %s %v", id, data, err)
	}
	c.Close(websocket.StatusNormalClosure, "")
}

// Logins minted by strangers through the OTA endpoint under device-auth
// token (issue 19: 4,110 from 137 addresses) leave at most
// max-unused-devices records behind, while the records of real devices
// (with tools, or named by a person) survive, offline as they are.
func TestStrangerLoginsLeaveBoundedRecords(t *testing.T) {
	addrs, each := strangerScale(t)
	const maxUnused = 20
	h := startHub(t, "", func(c *server.Config) {
		c.DeviceAuth = "token"
		c.MaxUnusedDevices = maxUnused
	})
	// A real device with tools, offline during the attack.
	real := h.otaDevice(sim.Config{DeviceID: "ac:00:00:00:19:11"})
	if _, err := real.Provision(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := connect(t, real); err != nil {
		t.Fatal(err)
	}
	h.readyTools(real.ID())
	real.Close()
	// A device without tools that a person named.
	const named = "ac:00:00:00:19:12"
	_, tok, _ := otaCheckFrom(t, h, http.DefaultClient, named, "c")
	strangerLogin(t, h, named, tok)
	if st, body := h.call("PATCH", "/api/devices/"+named, map[string]any{"name": "hall speaker"}); st != 200 {
		t.Fatalf("name the device: %d %v", st, body)
	}

	logins, refused := 0, 0
	deadline := time.Now().Add(2 * time.Minute)
	for a := range addrs {
		client := fromAddr(fmt.Sprintf("127.0.%d.%d", 20+a/200, 1+a%200))
		for i := range each {
			if time.Now().After(deadline) {
				t.Fatalf("the attack did not finish in 2 minutes (%d logins)", logins)
			}
			id := fmt.Sprintf("fe:00:00:%02x:%02x:%02x", a, i>>8, i&0xff)
			st, tok, _ := otaCheckFrom(t, h, client, id, "c")
			if st != 200 || tok == "" {
				refused++
				continue
			}
			strangerLogin(t, h, id, tok)
			logins++
		}
	}
	waitFor(t, "the strangers offline", func() bool { return h.Registry.OnlineCount() == 0 })
	// A real device new to the hub still gets in (its check also makes
	// room, as every new device's does).
	late := h.otaDevice(sim.Config{DeviceID: "ac:00:00:00:19:13"})
	if _, err := late.Provision(context.Background()); err != nil {
		t.Fatalf("a real new device after the attack: %v", err)
	}
	if err := connect(t, late); err != nil {
		t.Fatalf("a real new device after the attack: %v", err)
	}
	h.readyTools(late.ID())
	late.Close()
	waitFor(t, "the late device offline", func() bool { return h.Registry.OnlineCount() == 0 })
	h.stop()

	st, err := store.Open(context.Background(), filepath.Join(h.dir, "hub.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	devs, err := st.LoadAll(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	trust, err := st.LoadTrust(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]int{}
	for _, d := range devs {
		byID[d.Device.ID] = len(d.Tools)
	}
	t.Logf("%d stranger logins (%d checks refused) from %d addresses left %d device records and %d trust records",
		logins, refused, addrs, len(devs), len(trust))
	if n, ok := byID[real.ID()]; !ok || n == 0 {
		t.Errorf("the real device's record (with its tools) is gone: %v", ok)
	}
	if _, ok := byID[named]; !ok {
		t.Errorf("the device a person named is gone")
	}
	if n, ok := byID[late.ID()]; !ok || n == 0 {
		t.Errorf("the device that came after the attack is gone: %v", ok)
	}
	// The real devices, and at most maxUnused strangers.
	if len(devs) > maxUnused+3 || len(trust) > maxUnused+3 {
		t.Errorf("%d device records and %d trust records left, want at most %d each", len(devs), len(trust), maxUnused+3)
	}
}
