package server_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/xiaozhi-hub/hub/sim"
)

// BenchmarkCallsByTransport measures REST tool calls, closed loop with 16
// callers, to one idle device on WebSocket and to one on MQTT (embedded
// broker), in one process: the figures compare the two paths (the device
// and the HTTP client share the process and its CPU, so cpu/call is the
// whole process's per call, for both transports alike).
//
//	go test -run NONE -bench CallsByTransport -benchtime 20000x ./server
func BenchmarkCallsByTransport(b *testing.B) {
	for _, transport := range []string{"websocket", "mqtt"} {
		b.Run("transport="+transport, func(b *testing.B) {
			h := mqttHub(b, "", nil)
			const id = "aa:00:00:00:be:01"
			ans := otaCheck(b, h, id, "uuid-bench")
			var tool string
			if transport == "websocket" {
				d := sim.New(sim.Config{URL: h.DeviceURL(), DeviceID: id, ClientID: "uuid-bench", Token: tokenOf(ans)})
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				if err := d.Connect(ctx); err != nil {
					b.Fatal(err)
				}
				defer d.Close()
				tool = "self.get_device_status"
			} else {
				serveMCP(b, connectMQTT(b, mqttLogin(b, ans)))
				tool = "self.light.set"
			}
			h.readyTools(id)
			url := h.URL() + "/api/devices/" + id + "/tools/" + tool + "/call"
			body := []byte(`{"arguments":{"on":true}}`)
			if transport == "websocket" {
				body = []byte(`{}`)
			}
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 32}}
			const callers = 16
			var next sync.Mutex
			left := b.N
			cpu0 := processCPU()
			b.ResetTimer()
			start := time.Now()
			var wg sync.WaitGroup
			for range callers {
				wg.Go(func() {
					for {
						next.Lock()
						if left == 0 {
							next.Unlock()
							return
						}
						left--
						next.Unlock()
						req, _ := http.NewRequest("POST", url, bytes.NewReader(body))
						req.Header.Set("Authorization", "Bearer "+h.Token)
						res, err := client.Do(req)
						if err != nil {
							b.Error(err)
							return
						}
						_, _ = io.Copy(io.Discard, res.Body)
						res.Body.Close()
						if res.StatusCode != 200 {
							b.Errorf("call = %d", res.StatusCode)
							return
						}
					}
				})
			}
			wg.Wait()
			wall := time.Since(start)
			b.StopTimer()
			b.ReportMetric(float64(b.N)/wall.Seconds(), "calls/s")
			b.ReportMetric(float64((processCPU()-cpu0).Microseconds())/float64(b.N), "cpu-µs/call")
		})
	}
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
