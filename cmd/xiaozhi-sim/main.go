// Command xiaozhi-sim runs simulated xiaozhi-esp32 devices against a hub
// until interrupted. Devices that are dropped reconnect with a small,
// jittered back-off.
//
//	xiaozhi-sim --url ws://127.0.0.1:8000/xiaozhi/v1/ --count 3 --demo
//	xiaozhi-sim --count 100 --mode iot --id-prefix 02:00:00
//	xiaozhi-sim --ota http://127.0.0.1:8000/xiaozhi/ota/   # like real firmware: OTA check and activation first
//	xiaozhi-sim --load --count 15000 --rate 2000 --churn 1m  # load test (see load.go)
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/xiaozhi-hub/hub/sim"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "xiaozhi-sim:", err)
		}
		os.Exit(2)
	}
}

func run(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("xiaozhi-sim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	url := fs.String("url", "ws://127.0.0.1:8000/xiaozhi/v1/", "hub device WebSocket URL")
	otaURL := fs.String("ota", "", "OTA URL checked first, like the firmware at boot: the WebSocket URL, token and protocol version come from its answer, and an activation code is logged and polled until approved")
	count := fs.Int("count", 1, "number of devices")
	mode := fs.String("mode", "mcp", `firmware to imitate: "mcp" (2.x) or "iot" (legacy 1.7)`)
	token := fs.String("token", "", "bearer token (Authorization header)")
	version := fs.Int("protocol-version", 1, "binary audio protocol version 1..3")
	prefix := fs.String("id-prefix", sim.DefaultIDPrefix, "first octets of the generated device ids")
	demo := fs.Bool("demo", false, "cycle through the demo profiles (lamp, speaker, legacy kitchen device); overrides --mode")
	query := fs.Bool("query", false, "send identity as URL query parameters instead of headers")
	stagger := fs.Duration("stagger", 5*time.Millisecond, "delay between first connections")
	verbose := fs.Bool("v", false, "debug logging")
	transport := fs.String("transport", "auto", `auto (follow the OTA answer, like the firmware: MQTT+UDP when it offers MQTT), websocket, or mqtt (needs --ota on a hub with mqtt-listen)`)
	load := addLoadFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *mode != string(sim.ModeMCP) && *mode != string(sim.ModeIoT) {
		return fmt.Errorf("--mode must be mcp or iot, not %q", *mode)
	}
	if *version < 1 || *version > 3 {
		return fmt.Errorf("--protocol-version must be 1, 2 or 3, not %d", *version)
	}
	if *count < 1 {
		return fmt.Errorf("--count must be at least 1")
	}
	switch *transport {
	case "auto":
		*transport = ""
	case "websocket":
	case "mqtt":
		if *otaURL == "" {
			return fmt.Errorf("--transport mqtt needs --ota: the device gets its MQTT login from the hub's OTA answer")
		}
	default:
		return fmt.Errorf("--transport must be auto, websocket or mqtt, not %q", *transport)
	}
	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	if load.enabled() {
		return load.run(ctx, loadRun{*url, *token, *prefix, *count, *mode != string(sim.ModeMCP) || *demo || *otaURL != "" || *query}, log)
	}

	fc := sim.FleetConfig{
		Base: sim.Config{
			URL: *url, Token: *token, ProtocolVersion: *version, Mode: sim.Mode(*mode),
			IdentityInQuery: *query, Logger: log, OTAURL: *otaURL, Transport: *transport,
		},
		Count:    *count,
		IDPrefix: *prefix,
		Stagger:  *stagger,
	}
	if *demo {
		fc.Profiles = sim.DemoProfiles
	}
	fleet, err := sim.NewFleet(fc)
	if err != nil {
		return err
	}
	where := []any{"url", *url}
	if *otaURL != "" {
		where = []any{"ota", *otaURL}
	}
	log.Info("starting devices", append(where, "count", *count, "mode", *mode, "first", fleet.Devices[0].ID())...)

	done := make(chan struct{})
	go func() {
		defer close(done)
		if *otaURL == "" {
			fleet.Run(ctx)
			return
		}
		boot(ctx, fleet, *stagger)
	}()
	tick := time.NewTicker(30 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-done:
			log.Info("stopped")
			return nil
		case <-tick.C:
			log.Info("status", "connected", fleet.Connected(), "devices", *count)
		}
	}
}

// boot runs every device through the OTA check and activation, then serves
// it (sim.Device.Boot), until ctx ends.
func boot(ctx context.Context, fleet *sim.Fleet, stagger time.Duration) {
	var wg sync.WaitGroup
	for i, d := range fleet.Devices {
		if i > 0 && stagger > 0 {
			select {
			case <-ctx.Done():
			case <-time.After(stagger):
			}
		}
		wg.Go(func() { _ = d.Boot(ctx) })
	}
	wg.Wait()
}
