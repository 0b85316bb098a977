package server_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xiaozhi-hub/hub/server"
	"github.com/xiaozhi-hub/hub/sim"
)

// firmwareDir creates a firmware directory with files of the given sizes
// (names are relative to it; "../x" lands beside it).
func firmwareDir(t *testing.T, files map[string]int) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "firmware")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, size := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(strings.Repeat("\xe9", size)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// docs/protocol.md §12.21: firmware is offered for the device's board, as a numeric version,
// and served with Content-Length; the device downloads it and, rebooted
// into it, is offered nothing more.
func TestFirmwareOfferIsDownloadedWithContentLength(t *testing.T) {
	fw := firmwareDir(t, map[string]int{
		"bread-compact-wifi/2.4.2.bin":      100,
		"bread-compact-wifi/2.10.0.bin":     300_001, // newer than 2.9.9: numeric, not lexical
		"bread-compact-wifi/2.9.9.bin":      200,
		"bread-compact-wifi/v3.0.0.bin":     10, // refused: the device cannot compare it
		"bread-compact-wifi/2.11-beta.bin":  10,
		"bread-compact-wifi/notes.txt":      10,
		"esp-box-3/3.0.0.bin":               50,
		"../outside-the-firmware-dir.bin":   10,
		"bread-compact-wifi/sub/9.9.9.bin":  10,
		"bread-compact-wifi/9.9.9.bin.part": 10,
	})

	h := startHub(t, "", func(c *server.Config) { c.DeviceAuth = "token"; c.FirmwareDir = fw })
	const id = "ab:00:00:00:00:04"
	ans := checkAnswer(t, h.otaRequest("POST", "/xiaozhi/ota/", id, nil, systemInfo))
	offer, _ := ans["firmware"].(map[string]any)
	url, _ := offer["url"].(string)
	if offer["version"] != "2.10.0" || !strings.HasSuffix(url, "/xiaozhi/ota/firmware/bread-compact-wifi/2.10.0.bin") {
		t.Fatalf("offer: %v", ans)
	}
	res, err := (&http.Client{Transport: &http.Transport{DisableCompression: true}}).Get(url)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || res.ContentLength != 300_001 || len(body) != 300_001 || len(res.TransferEncoding) != 0 ||
		res.Header.Get("Content-Length") != "300001" {
		t.Fatalf("download: %d, Content-Length %q, %d bytes, encoding %v", res.StatusCode, res.Header.Get("Content-Length"), len(body), res.TransferEncoding)
	}
	// Another board gets its own; an unknown board or version gets nothing.
	for ua, want := range map[string]any{"esp-box-3/2.4.2": "3.0.0", "esp-box-3/3.0.0": nil, "unknown-board/1.0": nil,
		"bread-compact-wifi/v2.4.2": nil, "bread-compact-wifi/2.4.2-6-g48142026": "2.10.0"} {
		ans := checkAnswer(t, h.otaRequest("POST", "/xiaozhi/ota/", id, map[string]string{"User-Agent": ua}, systemInfo))
		got, _ := ans["firmware"].(map[string]any)
		if (want == nil) != (got == nil) || got != nil && got["version"] != want {
			t.Errorf("User-Agent %s: firmware %v, want %v", ua, got, want)
		}
	}
	// Refused versions and other files are never served.
	for _, p := range []string{"bread-compact-wifi/v3.0.0.bin", "bread-compact-wifi/2.11-beta.bin", "bread-compact-wifi/notes.txt",
		"bread-compact-wifi/9.9.9.bin.part", "..%2Foutside-the-firmware-dir.bin", "nope/1.0.bin"} {
		res, err := http.Get(h.URL() + "/xiaozhi/ota/firmware/" + p)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode/100 != 4 {
			t.Errorf("%s: %d", p, res.StatusCode)
		}
	}

	// A simulated device downloads it, "reboots" into it and reports it.
	d := h.otaDevice(sim.Config{DeviceID: id, Firmware: "2.4.2"})
	p, err := d.Provision(context.Background())
	if err != nil || len(p.Upgrades) != 1 || p.Upgrades[0] != (sim.Upgrade{Version: "2.10.0", Bytes: 300_001}) || p.Last.Firmware != nil {
		t.Fatalf("device upgrade: %+v %v", p, err)
	}
	if err := connect(t, d); err != nil {
		t.Fatal(err)
	}
	h.readyTools(id)
	if _, dev := h.call("GET", "/api/devices/"+id, nil); dev["firmware"] != "2.10.0" {
		t.Fatalf("device firmware after the upgrade: %v", dev)
	}
}

// The binary protocol version set on the hub reaches the device through
// the OTA answer, and the device's Protocol-Version and hello carry it.
func TestProtocolVersionsThroughOTA(t *testing.T) {
	for v := 1; v <= 3; v++ {
		t.Run(fmt.Sprint("v", v), func(t *testing.T) {
			h := startHub(t, "", func(c *server.Config) { c.DeviceAuth = "token"; c.WSProtocolVersion = v })
			id := fmt.Sprintf("ab:00:00:00:01:0%d", v)
			d := h.otaDevice(sim.Config{DeviceID: id, ProtocolVersion: 1 + v%3})
			if _, err := d.Provision(context.Background()); err != nil {
				t.Fatal(err)
			}
			if got := d.Config().ProtocolVersion; got != v {
				t.Fatalf("the device stored version %d, want %d", got, v)
			}
			if err := connect(t, d); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the device online", func() bool {
				_, dev := h.call("GET", "/api/devices/"+id, nil)
				return dev["online"] == true
			})
			if _, dev := h.call("GET", "/api/devices/"+id, nil); dev["protocolVersion"] != float64(v) {
				t.Fatalf("the hub negotiated %v, want %d", dev["protocolVersion"], v)
			}
		})
	}
}

// --demo works out of the box under the default policy (activation).
func TestDemoWorksUnderTheDefaultPolicy(t *testing.T) {
	h := startHub(t, "", func(c *server.Config) { c.DeviceAuth = server.DefaultConfig().DeviceAuth })
	startDemo(t, h, 2)
	waitFor(t, "2 demo devices online", func() bool {
		_, body := h.call("GET", "/api/devices", nil)
		devs, _ := body["devices"].([]any)
		online := 0
		for _, d := range devs {
			if d.(map[string]any)["online"] == true {
				online++
			}
		}
		return online == 2
	})
	// Strangers are still refused.
	if st, _ := h.wsRefusal("ab:00:00:00:00:05", ""); st != 401 {
		t.Fatalf("an unknown device under the default policy: %d", st)
	}
}
