package ota

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

const firmwareInfo = `{"version":2,"language":"zh-CN","flash_size":16777216,"minimum_free_heap_size":"123456",
	"mac_address":"aa:bb:cc:dd:ee:ff","uuid":"7b94d69a-1b2c-4d5e-8f90-0123456789ab","chip_model_name":"esp32s3",
	"chip_info":{"model":9,"cores":2,"revision":2,"features":18},
	"application":{"name":"xiaozhi","version":"2.4.2","compile_time":"Aug  8 2026T08:33:45Z","idf_version":"v6.0","elf_sha256":"` +
	"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef" + `"},
	"partition_table":[{"label":"nvs","type":1,"subtype":2,"address":36864,"size":16384}],
	"ota":{"label":"ota_0"},"board":{"type":"bread-compact-wifi","ssid":"MyWiFi","rssi":-55,"channel":6,"ip":"192.168.1.23","mac":"aa:bb:cc:dd:ee:ff"}}`

func TestFirmwareSystemInfoIsKeptWhole(t *testing.T) {
	got := summarizeSystemInfo([]byte(firmwareInfo))
	var want, have any
	_ = json.Unmarshal([]byte(firmwareInfo), &want)
	if err := json.Unmarshal(got, &have); err != nil {
		t.Fatalf("summary is not JSON: %v: %s", err, got)
	}
	wb, _ := json.Marshal(want)
	hb, _ := json.Marshal(have)
	if string(wb) != string(hb) {
		t.Fatalf("the firmware's system info was changed:\n%s\n%s", wb, hb)
	}
}

// A client can send 64 KB of system info; the hub keeps at most 4 KB, with
// the fields a person needs.
func TestHugeSystemInfoIsSummarised(t *testing.T) {
	junk := `"junk":"` + strings.Repeat("x", 30000) + `","many":[` + strings.Repeat(`{"a":"`+strings.Repeat("y", 100)+`"},`, 200) + `1],` +
		`"deep":{"a":{"b":{"c":{"d":{"e":1}}}}},`
	body := strings.Replace(firmwareInfo, `{"version":2,`, `{`+junk+`"version":2,`, 1)
	for i := range 100 {
		body = strings.Replace(body, `{"version":2,`, `{"k`+strings.Repeat("z", i)+`":"`+strings.Repeat("w", 500)+`","version":2,`, 1)
	}
	if len(body) < 50000 {
		t.Fatalf("test body is only %d bytes", len(body))
	}
	got := summarizeSystemInfo([]byte(body))
	if len(got) > maxInfoBytes {
		t.Fatalf("summary is %d bytes, want at most %d", len(got), maxInfoBytes)
	}
	var info struct {
		MAC         string `json:"mac_address"`
		Board       struct{ Type string }
		Application struct{ Version string }
		Partitions  []any `json:"partition_table"`
		Truncated   bool  `json:"_truncated"`
	}
	if err := json.Unmarshal(got, &info); err != nil {
		t.Fatalf("summary is not JSON: %v: %s", err, got)
	}
	if info.MAC != "aa:bb:cc:dd:ee:ff" || info.Board.Type != "bread-compact-wifi" || info.Application.Version != "2.4.2" ||
		len(info.Partitions) != 1 || !info.Truncated {
		t.Fatalf("summary lost what a person needs: %s", got)
	}
}

// countingStore counts the trust records read one by one.
type countingStore struct {
	*memStore
	reads atomic.Int32
}

func (s *countingStore) Trust(ctx context.Context, id string) (Trust, error) {
	s.reads.Add(1)
	return s.memStore.Trust(ctx, id)
}

// The language a device reported at its OTA check outlives a restart (it
// is read from the trust record), and a device that never made an OTA
// check has none, found without reading the store.
func TestLanguageOfADevice(t *testing.T) {
	st := &countingStore{memStore: &memStore{m: map[string]Trust{
		"aa:bb:cc:dd:ee:01": {DeviceID: "aa:bb:cc:dd:ee:01", SystemInfo: json.RawMessage(`{"language":"en-US"}`)},
	}}}
	s, err := New(context.Background(), Options{Store: st, SecretPath: filepath.Join(t.TempDir(), "device-secret")})
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Language("aa:bb:cc:dd:ee:01"); got != "en-US" {
		t.Fatalf("language of a device that reported en-US before the restart: %q", got)
	}
	before := st.reads.Load()
	if got := s.Language("aa:bb:cc:dd:ee:02"); got != "" {
		t.Fatalf("language of a device that never made an OTA check: %q", got)
	}
	if n := st.reads.Load() - before; n != 0 {
		t.Fatalf("finding that an unknown device has no language read the store %d times", n)
	}
}
