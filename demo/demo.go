// Package demo runs simulated devices in-process against a hub, so that a
// newcomer sees devices, tools and IoT things with no hardware
// (`xiaozhi-hub --demo`). It is kept out of package server, which only
// wires the hub: the simulator is not part of serving devices.
package demo

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/protocol"
	"github.com/xiaozhi-hub/hub/server"
	"github.com/xiaozhi-hub/hub/sim"
	"github.com/xiaozhi-hub/hub/sim/mqttdevice"
)

// Start runs n simulated devices against h. They take turns through
// sim.DemoProfiles (a small home: the living-room lamp, the kitchen
// speaker, a legacy 1.7 IoT device in the study, the bedroom lamp) and get
// that profile's name, room and aliases unless a person already named
// them; with MQTT on, every other one uses it. They run until ctx ends or
// stop is called; stop waits for them.
func Start(ctx context.Context, h *server.Hub, n int, log *slog.Logger) (stop func(), err error) {
	cfg := h.Config()
	if cfg.DeviceAuth != "open" && len(cfg.DeviceTokens) == 0 {
		return nil, fmt.Errorf("demo devices need device-auth open or a device token")
	}
	token := ""
	if len(cfg.DeviceTokens) > 0 {
		token = cfg.DeviceTokens[0]
	}
	fleet, err := sim.NewFleet(sim.FleetConfig{
		Base:     sim.Config{URL: h.DeviceURL(), Token: token, Logger: slog.New(quieter{log.Handler()}).With("component", "demo")},
		Count:    n,
		IDPrefix: "de:00:00",
		Profiles: sim.DemoProfiles,
	})
	if err != nil {
		return nil, err
	}
	// With MQTT on, every other demo device uses it (the kitchen speaker
	// and the bedroom lamp): both transports side by side.
	if addr := h.MQTTAddr(); addr != "" {
		for i, d := range fleet.Devices {
			if i%2 == 1 {
				c := d.Config()
				d.UseMQTT(mqttdevice.Config{Endpoint: addr, ClientID: protocol.MQTTClientID(c.DeviceID, c.ClientID),
					Username: c.DeviceID, Password: token, PublishTopic: protocol.UplinkTopic(c.DeviceID)})
			}
		}
	}
	// Label the devices before they connect, so the first listing shows names.
	for i, d := range fleet.Devices {
		if err := label(ctx, h, d, i/len(sim.DemoProfiles)+1); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { fleet.Run(ctx) })
	log.Debug("demo devices started", "count", n)
	return func() { cancel(); wg.Wait() }, nil
}

// label names a demo device after its profile; the round-th device of a
// profile (more demo devices than profiles) gets the round as a suffix, so
// that no two demo devices share a name.
func label(ctx context.Context, h *server.Hub, d *sim.Device, round int) error {
	cfg := d.Config()
	if dev, err := h.Registry.Device(cfg.DeviceID); err == nil && (dev.Name != "" || dev.Room != "") {
		return nil
	}
	name, room, aliases := cfg.Name, cfg.Room, slices.Clone(cfg.Aliases)
	if round > 1 {
		name = fmt.Sprintf("%s %d", name, round)
		for i := range aliases {
			aliases[i] = fmt.Sprintf("%s %d", aliases[i], round)
		}
	}
	patch := hub.DevicePatch{Name: &name, Room: &room}
	if len(aliases) > 0 {
		patch.Aliases = &aliases
	}
	_, err := h.Registry.Register(ctx, cfg.DeviceID, patch)
	return err
}

// quieter writes the simulated devices' info lines at debug: the hub's own
// log already has a line for each of their connections. Warnings and errors
// keep their level.
type quieter struct{ h slog.Handler }

func lower(l slog.Level) slog.Level {
	if l == slog.LevelInfo {
		return slog.LevelDebug
	}
	return l
}

func (q quieter) Enabled(ctx context.Context, l slog.Level) bool {
	return q.h.Enabled(ctx, lower(l))
}

func (q quieter) Handle(ctx context.Context, r slog.Record) error {
	r.Level = lower(r.Level)
	return q.h.Handle(ctx, r)
}

func (q quieter) WithAttrs(as []slog.Attr) slog.Handler { return quieter{q.h.WithAttrs(as)} }
func (q quieter) WithGroup(name string) slog.Handler    { return quieter{q.h.WithGroup(name)} }
