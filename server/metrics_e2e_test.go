package server_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/xiaozhi-hub/hub/opus"
	"github.com/xiaozhi-hub/hub/server"
	"github.com/xiaozhi-hub/hub/sim"
)

// The figures an operator graphs move when the things they count happen,
// and none is labelled by device id.
func TestOperatorMetrics(t *testing.T) {
	h := startHub(t, "", func(c *server.Config) { c.DeviceAuth = "activation" })
	d := h.device(sim.Config{DeviceID: "aa:00:00:00:6e:01", Token: h.Config().DeviceTokens[0]})
	h.readyTools(d.ID())
	otaCheck(t, h, "aa:00:00:00:6e:02", "uuid-6e-02") // unknown: gets a code
	if st, _ := h.call("POST", "/api/devices/"+d.ID()+"/tools/self.audio_speaker.set_volume/call", map[string]any{"arguments": map[string]any{"volume": 30}}); st != 200 {
		t.Fatal(st)
	}
	h.callWith("wrong-token", "GET", "/api/devices", nil)
	for sample, want := range map[string]float64{
		`xiaozhi_hub_ota_checks_total{outcome="activation"}`:                                           1,
		`xiaozhi_hub_activations_pending`:                                                              1,
		`xiaozhi_hub_devices_known`:                                                                    1,
		`xiaozhi_hub_calls_by_caller_total{caller="api"}`:                                              1,
		`xiaozhi_hub_http_requests_total{code="200",route="POST /api/devices/{id}/tools/{tool}/call"}`: 1,
		`xiaozhi_hub_http_requests_total{code="401",route="/api/"}`:                                    1,
		`xiaozhi_hub_http_requests_total{code="200",route="POST /xiaozhi/ota/{$}"}`:                    1,
		`xiaozhi_hub_handshakes_total{outcome="ok"}`:                                                   1,
	} {
		// Requests are counted once answered: poll.
		waitFor(t, sample, func() bool { return h.metric(t, sample) == want })
	}
	res, err := http.Get(h.URL() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if !strings.Contains(string(body), `xiaozhi_hub_build_info{go_version="go`) || !strings.Contains(string(body), `opus="`+opus.Implementation+`"`) {
		t.Error("no xiaozhi_hub_build_info with the Opus implementation")
	}
	if strings.Contains(string(body), "6e:01") || strings.Contains(string(body), "6e:02") {
		t.Error("a device id appears in /metrics")
	}
}
