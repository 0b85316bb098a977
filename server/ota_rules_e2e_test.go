package server_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/xiaozhi-hub/hub/server"
)

// otaRequest sends what the firmware sends (docs/protocol.md §2.1) for device id to path,
// with extra headers set ("" removes one), and returns the answer.
func (h *testHub) otaRequest(method, path, id string, extra map[string]string, body string) reply {
	h.t.Helper()
	req, err := http.NewRequest(method, h.URL()+path, strings.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	hdr := map[string]string{"Device-Id": id, "Client-Id": "7b94d69a-1b2c-4d5e-8f90-0123456789ab",
		"User-Agent": "bread-compact-wifi/2.4.2", "Activation-Version": "1", "Accept-Language": "zh-CN",
		"Content-Type": "application/json"}
	for k, v := range extra {
		hdr[k] = v
	}
	for k, v := range hdr {
		if v != "" {
			req.Header.Set(k, v)
		}
	}
	// The firmware's HTTP client: one request per connection, no gzip.
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableCompression: true, DisableKeepAlives: true}}
	res, err := client.Do(req)
	if err != nil {
		h.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	return reply{res, data}
}

// reply is an HTTP answer with its body.
type reply struct {
	*http.Response
	body []byte
}

const systemInfo = `{"version":2,"language":"zh-CN","flash_size":16777216,"minimum_free_heap_size":"123456",
	"mac_address":"ab:00:00:00:00:01","chip_model_name":"esp32s3","board":{"type":"bread-compact-wifi","ssid":"MyWiFi","rssi":-55}}`

var numericVersion = regexp.MustCompile(`^[0-9]+(\.[0-9]+)*$`)

// checkAnswer asserts what §2.2 and §12.19 require of every OTA answer
// and returns it decoded (numbers as json.Number).
func checkAnswer(t *testing.T, r reply) map[string]any {
	t.Helper()
	res, data := r.Response, r.body
	if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") ||
		res.ContentLength != int64(len(data)) || len(res.TransferEncoding) != 0 {
		t.Fatalf("answer: %d %v (length %d, encoding %v) %s", res.StatusCode, res.Header, res.ContentLength, res.TransferEncoding, data)
	}
	var ans map[string]any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&ans); err != nil {
		t.Fatalf("answer is not JSON: %v: %s", err, data)
	}
	walkObjects(ans, func(key string) {
		if len(key) > 15 {
			t.Errorf("member %q is longer than 15 characters (NVS keys): %s", key, data)
		}
		if key == "mqtt" {
			t.Errorf("the answer has an mqtt member, which switches devices to MQTT: %s", data)
		}
	})
	ws, _ := ans["websocket"].(map[string]any)
	url, _ := ws["url"].(string)
	_, hasToken := ws["token"].(string)
	version, _ := ws["version"].(json.Number)
	if v, err := version.Int64(); !strings.HasPrefix(url, "ws://") || !strings.HasSuffix(url, "/xiaozhi/v1/") || !hasToken ||
		err != nil || v < 1 || v > 3 {
		t.Fatalf("websocket must carry url, token and a numeric version, always: %s", data)
	}
	st, _ := ans["server_time"].(map[string]any)
	ts, err1 := st["timestamp"].(json.Number).Int64()
	off, err2 := st["timezone_offset"].(json.Number).Int64()
	_, local := time.Now().Zone()
	if err1 != nil || err2 != nil || ts < time.Now().Add(-24*time.Hour).UnixMilli() || ts > time.Now().Add(24*time.Hour).UnixMilli() ||
		off != int64(local/60) {
		t.Fatalf("server_time must be milliseconds and an offset in minutes (%d): %s", local/60, data)
	}
	if fw, ok := ans["firmware"].(map[string]any); ok {
		v, _ := fw["version"].(string)
		if _, force := fw["force"]; force || !numericVersion.MatchString(v) {
			t.Fatalf("firmware must have a numeric version and no force: %s", data)
		}
	}
	return ans
}

func walkObjects(v any, visit func(key string)) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			visit(k)
			walkObjects(x, visit)
		}
	case []any:
		for _, x := range v {
			walkObjects(x, visit)
		}
	}
}

// §12.19: whatever the policy and the device's state, the answer is 200
// JSON that no firmware chokes on.
func TestOTAAnswerRules(t *testing.T) {
	fw := firmwareDir(t, map[string]int{"bread-compact-wifi/2.5.0.bin": 1000, "bread-compact-wifi/v9.bin": 10})
	for _, policy := range []string{"open", "token", "activation"} {
		t.Run(policy, func(t *testing.T) {
			h := startHub(t, "", func(c *server.Config) { c.DeviceAuth = policy; c.FirmwareDir = fw })
			const id = "ab:00:00:00:00:01"
			ans := checkAnswer(t, h.otaRequest("POST", "/xiaozhi/ota/", id, nil, systemInfo))
			if act, pending := ans["activation"].(map[string]any); policy == "activation" {
				if !pending || act["challenge"] == "" || ans["websocket"].(map[string]any)["token"] != "" || ans["firmware"] != nil {
					t.Fatalf("an unknown device gets a code and a challenge, token \"\" and no firmware: %v", ans)
				}
				timeout, err := act["timeout_ms"].(json.Number).Int64()
				if err != nil || timeout != int64(10*time.Minute/time.Millisecond) {
					t.Fatalf("timeout_ms: %v", act)
				}
				approve(t, h, act["code"].(string))
				ans = checkAnswer(t, h.otaRequest("POST", "/xiaozhi/ota/", id, nil, systemInfo))
			}
			if ans["activation"] != nil || ans["websocket"].(map[string]any)["token"] == "" {
				t.Fatalf("an admitted device gets a token and no activation: %v", ans)
			}
			if f, _ := ans["firmware"].(map[string]any); f == nil || f["version"] != "2.5.0" {
				t.Fatalf("firmware offer: %v", ans)
			}
			// Running the newest version: no offer, so never force with the same version.
			ans = checkAnswer(t, h.otaRequest("POST", "/xiaozhi/ota/", id, map[string]string{"User-Agent": "bread-compact-wifi/2.5.0"}, systemInfo))
			if ans["firmware"] != nil {
				t.Fatalf("firmware offered to a device running it: %v", ans)
			}
			// The body is informational; GET and a missing trailing slash work too.
			checkAnswer(t, h.otaRequest("POST", "/xiaozhi/ota/", id, map[string]string{"User-Agent": "", "Content-Type": ""}, ""))
			checkAnswer(t, h.otaRequest("GET", "/xiaozhi/ota/", id, nil, ""))
			checkAnswer(t, h.otaRequest("POST", "/xiaozhi/ota", id, nil, systemInfo))
		})
	}
}

func approve(t *testing.T, h *testHub, code string) {
	t.Helper()
	if st, body := h.call("POST", "/api/activations/"+code+"/approve", nil); st != 200 {
		t.Fatalf("approve %s: %d %v", code, st, body)
	}
}

// §12.20: /activate only matters with a challenge; 202 while pending, 200
// once approved (answered at once); no activation object after approval.
func TestActivateRules(t *testing.T) {
	h := activationHub(t, "")
	const id = "ab:00:00:00:00:02"
	if r := h.otaRequest("POST", "/xiaozhi/ota/activate", id, nil, "{}"); r.StatusCode != 404 || !strings.Contains(string(r.body), "OTA check") {
		t.Fatalf("activate without a challenge issued: %d %s", r.StatusCode, r.body)
	}
	ans := checkAnswer(t, h.otaRequest("POST", "/xiaozhi/ota/", id, map[string]string{"Activation-Version": "2", "Serial-Number": "SN-0001"}, systemInfo))
	act := ans["activation"].(map[string]any)
	code, challenge := act["code"].(string), act["challenge"].(string)
	if len(code) != 6 || challenge == "" || !strings.Contains(act["message"].(string), code) {
		t.Fatalf("activation: %v", act)
	}
	if r := h.otaRequest("POST", "/xiaozhi/ota/activate", id, nil, "{}"); r.StatusCode != 202 {
		t.Fatalf("pending, v1 body: %d", r.StatusCode)
	}
	v2 := `{"algorithm":"hmac-sha256","serial_number":"SN-0001","challenge":"` + challenge + `","hmac":"` + strings.Repeat("ab", 32) + `"}`
	if r := h.otaRequest("POST", "/xiaozhi/ota/activate", id, map[string]string{"Activation-Version": "2"}, v2); r.StatusCode != 202 {
		t.Fatalf("pending, v2 body: %d", r.StatusCode)
	}
	stale := strings.Replace(v2, challenge, "0000", 1)
	if r := h.otaRequest("POST", "/xiaozhi/ota/activate", id, map[string]string{"Activation-Version": "2"}, stale); r.StatusCode != 409 {
		t.Fatalf("another challenge: %d", r.StatusCode)
	}
	_, list := h.call("GET", "/api/activations", nil)
	a := list["activations"].([]any)[0].(map[string]any)
	if a["activationVersion"] != 2.0 || a["serialNumber"] != "SN-0001" || a["hmac"] != strings.Repeat("ab", 32) {
		t.Fatalf("the v2 evidence is recorded: %v", a)
	}
	approve(t, h, code)
	// The firmware sends the same headers on every request (§2.4).
	v2hdr := map[string]string{"Activation-Version": "2", "Serial-Number": "SN-0001"}
	if r := h.otaRequest("POST", "/xiaozhi/ota/activate", id, v2hdr, v2); r.StatusCode != 200 {
		t.Fatalf("approved: %d", r.StatusCode)
	}
	ans = checkAnswer(t, h.otaRequest("POST", "/xiaozhi/ota/", id, v2hdr, systemInfo))
	if ans["activation"] != nil {
		t.Fatalf("activation object after approval (the device would loop): %v", ans)
	}
	_, trust := h.call("GET", "/api/devices/"+id+"/trust", nil)
	if trust["activationVersion"] != 2.0 || trust["serialNumber"] != "SN-0001" || trust["approved"] == nil {
		t.Fatalf("trust: %v", trust)
	}
}

func TestBadOTARequestsGet4xx(t *testing.T) {
	h := activationHub(t, "")
	const id = "ab:00:00:00:00:03"
	for _, c := range []struct {
		name, path string
		hdr        map[string]string
		body       string
		status     int
	}{
		{"no Device-Id", "/xiaozhi/ota/", map[string]string{"Device-Id": ""}, systemInfo, 400},
		{"bad Device-Id", "/xiaozhi/ota/", map[string]string{"Device-Id": `aa"bb`}, systemInfo, 400},
		{"long Client-Id", "/xiaozhi/ota/", map[string]string{"Client-Id": strings.Repeat("c", 200)}, systemInfo, 400},
		{"bad Activation-Version", "/xiaozhi/ota/", map[string]string{"Activation-Version": "3"}, systemInfo, 400},
		{"truncated JSON", "/xiaozhi/ota/", nil, `{"version":`, 400},
		{"not an object", "/xiaozhi/ota/", nil, `[1,2]`, 400},
		{"huge body", "/xiaozhi/ota/", nil, `{"x":"` + strings.Repeat("a", 70<<10) + `"}`, 413},
		{"activate without Device-Id", "/xiaozhi/ota/activate", map[string]string{"Device-Id": ""}, "{}", 400},
		{"activate garbage", "/xiaozhi/ota/activate", nil, "nope", 400},
		{"activate bad algorithm", "/xiaozhi/ota/activate", nil, `{"algorithm":"md5","challenge":"c","hmac":"00"}`, 400},
		{"activate bad hmac", "/xiaozhi/ota/activate", nil, `{"algorithm":"hmac-sha256","challenge":"c","hmac":"XYZ"}`, 400},
		{"activate wrong types", "/xiaozhi/ota/activate", nil, `{"challenge":5}`, 400},
	} {
		r := h.otaRequest("POST", c.path, id, c.hdr, c.body)
		var body map[string]any
		if r.StatusCode != c.status || json.Unmarshal(r.body, &body) != nil || errMessage(body) == "" {
			t.Errorf("%s: %d %s, want %d with a JSON error", c.name, r.StatusCode, r.body, c.status)
		}
	}
	if r := h.otaRequest("PUT", "/xiaozhi/ota/", id, nil, ""); r.StatusCode != 405 {
		t.Errorf("PUT: %d", r.StatusCode)
	}
	checkAnswer(t, h.otaRequest("POST", "/xiaozhi/ota/", id, nil, systemInfo)) // still serving
}
