// Package server assembles the hub: the SQLite store, the registry, the
// device endpoint, the REST API, health and metrics, on one listener. The
// command, the end-to-end tests and --demo all start the hub through it.
package server

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"

	"github.com/xiaozhi-hub/hub/accounts"
	"github.com/xiaozhi-hub/hub/agent"
	"github.com/xiaozhi-hub/hub/cluster"
	"github.com/xiaozhi-hub/hub/config"
	"github.com/xiaozhi-hub/hub/internal/datadir"
	"github.com/xiaozhi-hub/hub/internal/refusals"
	"github.com/xiaozhi-hub/hub/livesettings"
	"github.com/xiaozhi-hub/hub/mcpserver"
	"github.com/xiaozhi-hub/hub/metrics"
	"github.com/xiaozhi-hub/hub/oauth"
	"github.com/xiaozhi-hub/hub/ota"
	"github.com/xiaozhi-hub/hub/persona"
	"github.com/xiaozhi-hub/hub/registry"
	"github.com/xiaozhi-hub/hub/services"
	"github.com/xiaozhi-hub/hub/session"
	"github.com/xiaozhi-hub/hub/store"
	"github.com/xiaozhi-hub/hub/voice"
)

// Version is the hub's version, set at build time with -ldflags.
var Version = "dev"

// Hub is a running hub. Open starts it listening; Run serves until its
// context ends; Close releases everything.
type Hub struct {
	cfg      Config
	log      *slog.Logger
	lock     *datadir.Lock
	store    *store.Store
	cluster  *cluster.Member // nil unless cluster-nats is set
	Registry *registry.Registry
	Metrics  *metrics.Metrics
	trust    *ota.Service
	oauth    *oauth.Service // nil with mcp-oauth off
	accounts *accounts.Service
	services *services.Manager // outside MCP tools (services.go)
	agent    *agent.Agent
	live     *livesettings.Service // settings changed while running (live.go)
	personas *persona.Service      // the assistant's persona and memory per device
	sources  map[string]string     // where each setting came from (config.Sources)
	mcp      *mcpserver.Server
	closeMCP func() // once: ending the HTTP server and closing the MCP server both need it
	voice    *voice.Engine
	devices  *session.Server
	mqtt     *mqttSide // nil unless mqtt-listen or mqtt-broker is set
	http     *http.Server
	ln       net.Listener
	// refusals limits the logging and recording of refused devices, for
	// every transport alike.
	refusals *refusals.Reports
	// closers stop what Open started, in reverse (closers.go).
	closers closers
	// Token is the admin API token in force.
	Token string
}

// Open opens the data directory and the store, loads the registry and
// starts listening (so that Addr is known, and a bad address fails here).
func Open(ctx context.Context, cfg Config, log *slog.Logger) (*Hub, error) {
	return OpenWithSources(ctx, cfg, nil, log)
}

// OpenWithSources is Open for a hub that knows where each setting came
// from (config.Sources: the command's flags, environment and file), which
// the live settings show and by which a flag's value stays fixed; with
// nil, a value other than the default counts as the config file's.
func OpenWithSources(ctx context.Context, cfg Config, sources map[string]string, log *slog.Logger) (*Hub, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	vopts, err := voiceOptions(cfg)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	h := &Hub{cfg: cfg.WithInProcessToken(), log: log, Metrics: metrics.New(), refusals: &refusals.Reports{}, sources: sources}
	// Each step pushes the closers of what it starts; a failed step, and
	// Close, run them in reverse. The steps are thus the shutdown order
	// read backwards: HTTP ends first; MQTT devices go offline with the
	// broker before the device endpoint closes; the sessions close their
	// conversations before the voice engine closes; the registry writes
	// what is queued once every user of it is gone; the cluster then
	// lets its devices' claims go; the store closes; the lock goes last.
	for _, step := range []func(context.Context) error{
		h.openStore,    // the data directory's lock, the admin token, SQLite
		h.joinCluster,  // cluster-nats (cluster.go)
		h.newRegistry,  // starts nothing until loadRegistry
		h.bindMQTT,     // before openTrust: the OTA answer tells devices the broker's port (mqtt.go)
		h.openTrust,    // the device-auth policy (OTA), OAuth for /mcp
		h.openAccounts, // users, homes and their tokens (accounts.go)
		h.loadRegistry, // and the cluster's watch of the shared state
		h.openLive,     // live settings, personas and memory (live.go)
		func(context.Context) error { return h.openServices(vopts) }, // agent, /mcp, voice, device endpoint
		// outside MCP tools: endpoints, mcp-servers (services.go)
		h.openToolServices,
		h.wireMQTT,  // the MQTT devices' sessions on the device endpoint
		h.listen,    // HTTP, so that a bad address fails here
		h.startMQTT, // devices on MQTT are served from here on
	} {
		if err := step(ctx); err != nil {
			_ = h.closers.unwind()
			return nil, err
		}
	}
	if err := h.lock.Describe(h.ln.Addr().String()); err != nil {
		log.Warn("could not write the listen address into the lock file", "err", err)
	}
	return h, nil
}

// Config is the configuration the hub runs with.
func (h *Hub) Config() Config { return h.cfg }

// Startup is what the hub tells an operator once it listens: where the
// dashboard is, and which outside services it will use.
type Startup struct {
	Dashboard string // URL of the dashboard on this machine
	LLM       string // "anthropic claude-…" or "not configured (…)"
	Speech    string // speech recognition and synthesis providers
}

// Startup describes the running hub for the startup log.
func (h *Hub) Startup() Startup {
	cur := h.live.Current()
	return Startup{Dashboard: h.URL() + "/", LLM: config.LLMSummary(cur.Agent, cur.LLMErr), Speech: cur.Config.SpeechSummary()}
}

// Addr is the address the hub listens on.
func (h *Hub) Addr() net.Addr { return h.ln.Addr() }

// URL is the hub's base URL on loopback, for local clients and tests.
func (h *Hub) URL() string {
	_, port, _ := net.SplitHostPort(h.ln.Addr().String())
	return "http://127.0.0.1:" + port
}

// OTAURL is the OTA endpoint on loopback. Devices on the network use the
// same path on an address they can reach (see public-url).
func (h *Hub) OTAURL() string { return h.URL() + "/xiaozhi/ota/" }

// DeviceURL is the WebSocket URL devices on this machine connect to.
func (h *Hub) DeviceURL() string {
	_, port, _ := net.SplitHostPort(h.ln.Addr().String())
	return "ws://127.0.0.1:" + port + "/xiaozhi/v1/"
}

// MQTTAddr is the address of the embedded MQTT broker ("" when
// mqtt-listen is not set).
func (h *Hub) MQTTAddr() string {
	if h.mqtt == nil {
		return ""
	}
	if h.mqtt.broker == nil {
		return ""
	}
	return h.mqtt.broker.Addr()
}

// UDPAddr is the address of the UDP audio server ("" when mqtt-listen is
// not set).
func (h *Hub) UDPAddr() string {
	if h.mqtt == nil {
		return ""
	}
	return h.mqtt.audio.Addr().String()
}

// Run serves until ctx ends, then shuts down gracefully.
func (h *Hub) Run(ctx context.Context) error {
	errc := make(chan error, 1)
	go func() { errc <- h.http.Serve(h.ln) }()
	h.log.Info("hub listening", "addr", h.ln.Addr().String(), "ota", h.OTAURL(), "devices", h.DeviceURL(),
		"deviceAuth", h.cfg.DeviceAuth, "api", h.URL()+"/api/devices")
	if h.mqtt != nil {
		h.log.Info("MQTT+UDP transport listening", "mqtt", h.MQTTAddr(), "broker", h.cfg.MQTTBroker != "", "udp", h.mqtt.audio.Addr().String())
	}
	select {
	case err := <-errc:
		_ = h.Close()
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	return h.Close()
}

// Close stops serving and releases everything, in the reverse order of
// Open's steps. Safe to call after Run, and more than once.
func (h *Hub) Close() error { return h.closers.unwind() }
