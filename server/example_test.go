package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"

	"github.com/xiaozhi-hub/hub/server"
	"github.com/xiaozhi-hub/hub/sim"
)

// Any HTTP client uses the REST API with the admin token as a bearer token;
// here net/http against a hub on loopback with one simulated device: name
// the device, then list the devices.
func Example_apiClient() {
	dir, err := os.MkdirTemp("", "hub-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	cfg := server.DefaultConfig()
	cfg.Listen, cfg.DataDir, cfg.DeviceAuth = "127.0.0.1:0", dir, "open"
	cfg.APIToken = "example-token-0123456789"
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	h, err := server.Open(ctx, cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		fmt.Println(err)
		return
	}
	stopped := make(chan error, 1)
	go func() { stopped <- h.Run(ctx) }()
	defer func() { stop(); <-stopped }()

	do := func(method, path, body string) (*http.Response, error) {
		req, err := http.NewRequest(method, h.URL()+path, strings.NewReader(body))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Authorization", "Bearer "+cfg.APIToken)
		req.Header.Set("Content-Type", "application/json")
		return http.DefaultClient.Do(req)
	}

	dev := sim.New(sim.Config{URL: h.DeviceURL(), DeviceID: "aa:bb:cc:dd:ee:01"})
	if err := dev.Connect(ctx); err != nil { // returns after the hello
		fmt.Println(err)
		return
	}
	defer dev.Close()

	res, err := do("PATCH", "/api/devices/aa:bb:cc:dd:ee:01", `{"name":"吸顶灯","room":"客厅"}`)
	if err != nil {
		fmt.Println(err)
		return
	}
	res.Body.Close()
	fmt.Println("PATCH:", res.StatusCode)

	res, err = do("GET", "/api/devices", "")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer res.Body.Close()
	var list struct {
		Devices []struct {
			ID     string `json:"id"`
			Name   string `json:"name"`
			Room   string `json:"room"`
			Online bool   `json:"online"`
		} `json:"devices"`
	}
	if err := json.NewDecoder(res.Body).Decode(&list); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("GET:", res.StatusCode)
	for _, d := range list.Devices {
		fmt.Println(d.ID, d.Name, d.Room, "online:", d.Online)
	}
	// Output:
	// PATCH: 200
	// GET: 200
	// aa:bb:cc:dd:ee:01 吸顶灯 客厅 online: true
}
