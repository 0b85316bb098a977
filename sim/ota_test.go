package sim_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xiaozhi-hub/hub/sim"
)

// otaServer is a scripted OTA endpoint: answer returns the body for the
// n-th check (from 0), activate the status for the n-th /activate.
type otaServer struct {
	t        *testing.T
	srv      *httptest.Server
	answer   func(n int, r *http.Request) string
	activate func(n int) int

	mu       sync.Mutex
	checks   []*http.Request
	bodies   []string
	actBody  []string
	download func(w http.ResponseWriter)
}

func newOTAServer(t *testing.T, answer func(int, *http.Request) string, activate func(int) int) *otaServer {
	o := &otaServer{t: t, answer: answer, activate: activate}
	o.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		o.mu.Lock()
		defer o.mu.Unlock()
		switch r.URL.Path {
		case "/xiaozhi/ota/", "/xiaozhi/ota":
			o.checks = append(o.checks, r)
			o.bodies = append(o.bodies, string(body))
			io.WriteString(w, o.answer(len(o.checks)-1, r))
		case "/xiaozhi/ota/activate":
			o.actBody = append(o.actBody, string(body))
			w.WriteHeader(o.activate(len(o.actBody) - 1))
		case "/fw.bin":
			o.download(w)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(o.srv.Close)
	return o
}

func (o *otaServer) url() string { return o.srv.URL + "/xiaozhi/ota/" }

func fastOTA(cfg sim.Config) sim.Config {
	cfg.ActivationPoll, cfg.ActivationRetry, cfg.OTARetry = time.Millisecond, time.Millisecond, time.Millisecond
	return cfg
}

func TestProvisionShowsCodeAndPollsUntilApproved(t *testing.T) {
	o := newOTAServer(t, func(n int, _ *http.Request) string {
		ws := `"websocket":{"url":"ws://hub.local:8000/xiaozhi/v1/","token":"tok-` + string(rune('0'+n)) + `","version":3}`
		if n == 0 {
			return `{"server_time":{"timestamp":1754611200000,"timezone_offset":480},` + ws +
				`,"activation":{"code":"012345","message":"hub\n012345","challenge":"c-1","timeout_ms":600000}}`
		}
		return `{` + ws + `}`
	}, func(n int) int {
		if n < 2 {
			return http.StatusAccepted
		}
		return http.StatusOK
	})
	var shown []string
	d := sim.New(fastOTA(sim.Config{OTAURL: o.url(), DeviceID: "aa:00:00:00:0a:01", Board: "esp-box-3", Firmware: "2.4.2",
		OnActivation: func(code, _ string) { shown = append(shown, code) }}))
	p, err := d.Provision(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Codes) != 1 || p.Codes[0] != "012345" || len(shown) != 1 || len(o.actBody) != 3 || len(o.checks) != 2 {
		t.Fatalf("codes %v, shown %v, %d polls, %d checks", p.Codes, shown, len(o.actBody), len(o.checks))
	}
	cfg := d.Config()
	if cfg.URL != "ws://hub.local:8000/xiaozhi/v1/" || cfg.Token != "tok-1" || cfg.ProtocolVersion != 3 {
		t.Fatalf("websocket settings not applied: %q %q %d", cfg.URL, cfg.Token, cfg.ProtocolVersion)
	}
	r := o.checks[0]
	for h, want := range map[string]string{"Device-Id": "aa:00:00:00:0a:01", "Client-Id": cfg.ClientID,
		"User-Agent": "esp-box-3/2.4.2", "Activation-Version": "1", "Accept-Language": "zh-CN", "Content-Type": "application/json"} {
		if got := r.Header.Get(h); got != want {
			t.Errorf("%s: %q, want %q", h, got, want)
		}
	}
	var info map[string]any
	if err := json.Unmarshal([]byte(o.bodies[0]), &info); err != nil || info["mac_address"] != "aa:00:00:00:0a:01" ||
		info["minimum_free_heap_size"] != "123456" {
		t.Errorf("system info body: %s %v", o.bodies[0], err)
	}
	if o.actBody[0] != "{}" {
		t.Errorf("activation v1 body: %s", o.actBody[0])
	}
	if p.Last.Timestamp != 0 || p.Last.HasServerTime {
		t.Errorf("the last answer had no server_time: %+v", p.Last)
	}
}

func TestProvisionActivationVersion2(t *testing.T) {
	o := newOTAServer(t, func(n int, _ *http.Request) string {
		if n == 0 {
			return `{"activation":{"code":"654321","message":"m","challenge":"3f1c9a","timeout_ms":1}}`
		}
		return `{}`
	}, func(int) int { return http.StatusOK })
	key := []byte("efuse-key")
	d := sim.New(fastOTA(sim.Config{OTAURL: strings.TrimSuffix(o.url(), "/"), SerialNumber: "SN0001", ActivationKey: key}))
	if _, err := d.Provision(context.Background()); err != nil {
		t.Fatal(err)
	}
	if h := o.checks[0].Header; h.Get("Activation-Version") != "2" || h.Get("Serial-Number") != "SN0001" {
		t.Fatalf("v2 headers: %v", h)
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte("3f1c9a"))
	want := `{"algorithm":"hmac-sha256","challenge":"3f1c9a","hmac":"` + hex.EncodeToString(m.Sum(nil)) + `","serial_number":"SN0001"}`
	if o.actBody[0] != want {
		t.Fatalf("v2 body:\n%s\nwant\n%s", o.actBody[0], want)
	}
}

func TestCheckOTARefusesWhatBreaksTheFirmware(t *testing.T) {
	for _, c := range []struct{ name, body, want string }{
		{"mqtt object without endpoint", `{"mqtt":{},"websocket":{"url":"ws://x/","token":"","version":1}}`, "MQTT"},
		{"long mqtt NVS key", `{"mqtt":{"endpoint":"h:1883","subscribe_topic_x":"a"}}`, "15"},
		{"long NVS key", `{"websocket":{"url":"ws://x/","token":"","version":1,"reconnect_interval":5}}`, "15"},
		{"non-numeric firmware", `{"firmware":{"version":"v2.5.0","url":"http://x/fw.bin"}}`, "stoi"},
		{"forced same version", `{"firmware":{"version":"2.4.2","url":"http://x/fw.bin","force":1}}`, "every boot"},
		{"not JSON", `<html>`, "JSON"},
	} {
		o := newOTAServer(t, func(int, *http.Request) string { return c.body }, nil)
		d := sim.New(sim.Config{OTAURL: o.url(), Firmware: "2.4.2"})
		if _, err := d.CheckOTA(context.Background()); !errors.Is(err, sim.ErrOTA) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want ErrOTA mentioning %q", c.name, err, c.want)
		}
	}
	// A string version reads back as 1; members not sent keep their value.
	o := newOTAServer(t, func(int, *http.Request) string { return `{"websocket":{"version":"3"}}` }, nil)
	d := sim.New(sim.Config{OTAURL: o.url(), URL: "ws://old/", Token: "kept", ProtocolVersion: 2})
	if _, err := d.CheckOTA(context.Background()); err != nil {
		t.Fatal(err)
	}
	if c := d.Config(); c.URL != "ws://old/" || c.Token != "kept" || c.ProtocolVersion != 1 {
		t.Fatalf("NVS semantics: %q %q %d", c.URL, c.Token, c.ProtocolVersion)
	}
}

func TestFirmwareUpgradeNeedsContentLength(t *testing.T) {
	image := strings.Repeat("x", 5000)
	var o *otaServer
	o = newOTAServer(t, func(_ int, r *http.Request) string {
		if r.Header.Get("User-Agent") == "bread-compact-wifi/2.4.2" {
			return `{"firmware":{"version":"2.5.0","url":"` + o.srv.URL + `/fw.bin"}}`
		}
		return `{}`
	}, nil)
	o.download = func(w http.ResponseWriter) { // chunked: no Content-Length
		io.WriteString(w, image[:100])
		w.(http.Flusher).Flush()
		io.WriteString(w, image[100:])
	}
	d := sim.New(sim.Config{OTAURL: o.url(), Firmware: "2.4.2"})
	p, err := d.Provision(context.Background())
	if err != nil || len(p.Upgrades) != 0 || d.Config().Firmware != "2.4.2" {
		t.Fatalf("a chunked image must not be installed: %+v %v", p, err)
	}
	o.download = func(w http.ResponseWriter) {
		w.Header().Set("Content-Length", "5000")
		io.WriteString(w, image)
	}
	p, err = d.Provision(context.Background())
	if err != nil || len(p.Upgrades) != 1 || p.Upgrades[0] != (sim.Upgrade{Version: "2.5.0", Bytes: 5000}) || d.Config().Firmware != "2.5.0" {
		t.Fatalf("upgrade: %+v %v", p, err)
	}
	if ua := o.checks[len(o.checks)-1].Header.Get("User-Agent"); ua != "bread-compact-wifi/2.5.0" {
		t.Fatalf("after the reboot the check reports %q", ua)
	}
}
