package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"time"

	"github.com/xiaozhi-hub/hub/sim"
)

// Load mode (--load): many devices from this one process for load tests,
// through sim.Load. For example, 15,000 devices spread over 8 loopback
// source addresses, 2,000 per second, each dropping its connection about
// once a minute:
//
//	xiaozhi-sim --load --count 15000 --sources 8 --rate 2000 --churn 1m
type loadFlags struct {
	on           *bool
	profile      *string
	sources      *int
	rate         *float64
	dialCap      *int
	churn        *time.Duration
	reconnectMin *time.Duration
	reconnectMax *time.Duration
	listen       *bool
}

func addLoadFlags(fs *flag.FlagSet) *loadFlags {
	return &loadFlags{
		on:           fs.Bool("load", false, "load mode: run --count devices from this process as a load test (see the flags below; --mode, --demo, --ota and --query do not apply)"),
		profile:      fs.String("profile", sim.ProfileFirmware, "load: tool set of every device: small (2 tools), firmware (the 2.4.2 built-ins) or many-pages (4 tools/list pages of up to 8 KB)"),
		sources:      fs.Int("sources", -1, "load: spread connections over this many loopback source addresses 127.0.0.2… (-1: 4 for a hub on loopback, else 0)"),
		rate:         fs.Float64("rate", 0, "load: devices started per second (0: all at once)"),
		dialCap:      fs.Int("dial-cap", 0, "load: first connection attempts in flight at most (0: no cap)"),
		churn:        fs.Duration("churn", 0, "load: each device drops its connection after a random time around this mean and reconnects (0: never)"),
		reconnectMin: fs.Duration("reconnect-min", 500*time.Millisecond, "load: shortest back-off before reconnecting"),
		reconnectMax: fs.Duration("reconnect-max", 30*time.Second, "load: longest back-off before reconnecting"),
		listen:       fs.Bool("listen", false, `load: every device sends "listen start" (auto mode) right after its hello, as firmware on WebSocket does, then stays silent`),
	}
}

func (lf *loadFlags) enabled() bool { return *lf.on }

// loadRun is what load mode takes from the common flags.
type loadRun struct {
	url, token, prefix string
	count              int
	other              bool // a flag load mode does not support was set
}

func (lf *loadFlags) run(ctx context.Context, r loadRun, log *slog.Logger) error {
	if r.other {
		return errors.New("--load does not combine with --mode iot, --demo, --ota or --query")
	}
	sources := *lf.sources
	if sources < 0 {
		sources = 0
		if _, err := sim.LoopbackSources(r.url, 1); err == nil {
			sources = 4
		}
	}
	l, err := sim.NewLoad(sim.LoadConfig{
		URL: r.url, Token: r.token, IDPrefix: r.prefix, Profile: *lf.profile,
		Sources: sources, Rate: *lf.rate, MaxDialing: *lf.dialCap, Churn: *lf.churn,
		ReconnectMin: *lf.reconnectMin, ReconnectMax: *lf.reconnectMax, ListenOnConnect: *lf.listen,
	})
	if err != nil {
		return err
	}
	defer l.Stop()
	log.Info("load: starting devices", "count", r.count, "url", r.url, "profile", *lf.profile,
		"sources", sources, "rate", *lf.rate, "churn", *lf.churn)
	start := time.Now()
	started := make(chan error, 1)
	go func() { started <- l.Start(ctx, r.count) }()
	tick := time.NewTicker(5 * time.Second)
	defer tick.Stop()
	for {
		select {
		case err := <-started:
			if err != nil && ctx.Err() == nil {
				return fmt.Errorf("load: %w", err)
			}
			started = nil
		case <-tick.C:
			st := l.Stats()
			log.Info("load: status", "devices", st.Devices, "connected", st.Connected, "connects", st.Connects,
				"failures", st.Failures, "churnDrops", st.Drops, "elapsed", time.Since(start).Round(time.Second))
		case <-ctx.Done():
			log.Info("load: stopping", "connected", l.Stats().Connected)
			return nil
		}
	}
}
