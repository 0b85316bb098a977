// Package server assembles the hub: the SQLite store, the registry, the
// device endpoint, the REST API, health and metrics, on one listener. The
// command, the end-to-end tests and --demo all start the hub through it.
package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/agent"
	"github.com/xiaozhi-hub/hub/api"
	"github.com/xiaozhi-hub/hub/dashboard"
	"github.com/xiaozhi-hub/hub/internal/refusals"
	"github.com/xiaozhi-hub/hub/mcpclient"
	"github.com/xiaozhi-hub/hub/mcpserver"
	"github.com/xiaozhi-hub/hub/metrics"
	"github.com/xiaozhi-hub/hub/oauth"
	"github.com/xiaozhi-hub/hub/ota"
	"github.com/xiaozhi-hub/hub/registry"
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
	store    *store.Store
	Registry *registry.Registry
	Metrics  *metrics.Metrics
	devices  *session.Server
	voice    *voice.Engine
	mqtt     *mqttSide    // nil unless mqtt-listen is set
	cluster  *clusterSide // nil unless cluster-nats is set
	agent    *agent.Agent
	mcp      *mcpserver.Server
	closeMCP func() // once: both Close and closeCore need it
	http     *http.Server
	ln       net.Listener
	lock     *dirLock
	fresh    newConns // connections with no request yet, closed at shutdown
	// refusals limits the logging and recording of refused devices, for
	// every transport alike.
	refusals *refusals.Reports
	// Token is the admin API token in force.
	Token string
}

// Open opens the data directory and the store, loads the registry and
// starts listening (so that Addr is known, and a bad address fails here).
func Open(ctx context.Context, cfg Config, log *slog.Logger) (*Hub, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	vopts, err := voiceOptions(cfg)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	lock, err := lockDataDir(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	token, err := adminToken(cfg, log)
	if err != nil {
		lock.release()
		return nil, err
	}
	st, err := store.Open(ctx, filepath.Join(cfg.DataDir, "hub.db"), store.Options{MaxCalls: cfg.MaxCalls})
	if err != nil {
		lock.release()
		return nil, fmt.Errorf("open store: %w", err)
	}
	m := metrics.New()
	var regStore registry.Store = st
	var presence func(string, bool, string)
	var cl *clusterSide
	if cfg.ClusterNATS != "" {
		if cl, err = openCluster(ctx, cfg, log); err != nil {
			st.Close()
			lock.release()
			return nil, err
		}
		regStore, presence = cl.node.Store(st), cl.node.Presence
	}
	reg := registry.New(regStore, registry.Options{
		Logger: log.With("component", "registry"), Metrics: m,
		DefaultCallTimeout: cfg.CallTimeout, MaxCallTimeout: cfg.MaxCallTimeout, Presence: presence,
	})
	if len(cfg.DeviceTokens) == 0 {
		// In-process devices (--demo) present this token; it exists only
		// in this process, so they work under every policy (and over MQTT,
		// whose logins need a token even under open).
		cfg.DeviceTokens = []string{inProcessToken()}
	}
	h := &Hub{cfg: cfg, log: log, store: st, Registry: reg, Metrics: m, Token: token, lock: lock, cluster: cl, refusals: &refusals.Reports{}}
	// undo releases what is open until the registry loads (the registry
	// and the OTA service start nothing until used); after that, failures
	// unwind through closeCore.
	undo := func() {
		if h.mqtt != nil {
			h.mqtt.stop()
		}
		h.closeCluster()
		st.Close()
		lock.release()
	}
	// The MQTT broker is bound first: the OTA answer tells devices its port.
	mq, mqttOn, _ := cfg.mqttSettings() // checked by Validate
	var mqttOffer *ota.MQTT
	if mqttOn {
		if h.mqtt, err = h.bindMQTT(mq); err != nil {
			undo()
			return nil, err
		}
		mqttOffer = h.mqtt.offer(mq)
	}
	var trustStore ota.Store = st
	var shareSecret func(context.Context, []byte) ([]byte, error)
	var peers ota.Peers
	if cl != nil {
		trustStore, shareSecret, peers = cl.node.TrustStore(st), cl.node.ShareSecret, cl.node
	}
	trust, err := ota.New(ctx, ota.Options{
		Store: trustStore, Registry: reg, SecretPath: filepath.Join(cfg.DataDir, deviceSecretFile),
		ShareSecret: shareSecret, Peers: peers,
		Policy: cfg.DeviceAuth, DeviceTokens: cfg.DeviceTokens, PublicURL: cfg.PublicURL,
		WSVersion: cfg.WSProtocolVersion, CodeTTL: cfg.ActivationExpiry, FirmwareDir: cfg.FirmwareDir,
		RatePerAddr: float64(cfg.OTAChecksPerMinute) / 60, BurstPerAddr: cfg.OTABurst, MaxPendingPerAddr: cfg.ActivationCodesPerAddress,
		NewDevicesPerAddr: cfg.NewDevicesPerAddress, MaxUnusedDevices: cfg.MaxUnusedDevices,
		MQTT: mqttOffer, Logger: log.With("component", "ota"), OnCheck: m.OTACheck, Refusals: h.refusals,
	})
	if err != nil {
		undo()
		return nil, err
	}
	var auth *oauth.Service
	if cfg.MCPOAuth == "on" {
		var oauthStore oauth.Store = st
		if cl != nil {
			oauthStore = cl.node.OAuthStore(st)
		}
		if auth, err = oauth.New(ctx, oauthStore, oauth.Options{PublicURL: cfg.PublicURL, Logger: log.With("component", "oauth")}); err != nil {
			undo()
			return nil, fmt.Errorf("oauth: %w", err)
		}
		if cl != nil {
			cl.node.ServeOAuth(auth)
		}
	}
	// Load starts the registry's background persistence: from here on,
	// failures unwind through closeCore.
	if err := reg.Load(ctx); err != nil {
		reg.Close()
		undo()
		return nil, err
	}
	// A deleted device loses its approval and tokens: deleting means
	// "this device is not ours", not "forget its cache until it reconnects".
	reg.OnDelete(func(ctx context.Context, id string) error {
		if _, err := trust.Revoke(ctx, id); err != nil && hub.ErrorCode(err) != hub.ENOTFOUND {
			return err
		}
		return nil
	})
	if cl != nil {
		cl.metrics(m)
		err := cl.node.ServeTrust(trust)
		if err == nil {
			err = cl.node.Start(ctx, reg)
		}
		if err != nil {
			h.closeCore()
			return nil, err
		}
	}
	var vision *mcpclient.Vision
	if cfg.VisionURL != "" {
		vision = &mcpclient.Vision{URL: cfg.VisionURL, Token: cfg.VisionToken}
	}
	h.agent = agent.New(reg, agent.Config{
		Provider: cfg.AgentProvider, Model: cfg.AgentModel, APIKey: cfg.AgentAPIKey, BaseURL: cfg.AgentBaseURL,
		AuthToken: cfg.AgentAuthToken, DirectLimit: cfg.MCPDirectLimit, Logger: log.With("component", "agent"), Shared: sharedHistory(cl),
		OnRun: func(r agent.RunRecord) {
			m.AgentRun(r.Outcome, r.DurationMs/1000, r.Usage.InputTokens, r.Usage.OutputTokens)
		},
	})
	vm := h.newVoiceMetrics()
	vopts.Brain, vopts.Logger = agentBrain{h.agent}, log.With("component", "voice")
	vopts.OnTurn = func(r voice.TurnRecord) { vm.turn(reg, r) }
	vopts.VoiceOf = func(id string) string { // a person's choice for the device (PATCH voice)
		if d, err := reg.Device(id); err == nil {
			return d.Voice
		}
		return ""
	}
	vopts.LanguageOf = deviceLanguage(reg, trust)
	h.voice = voice.New(vopts)
	h.devices = session.New(session.Options{
		Registry: reg, Authorize: trust.Authorize, Logger: log.With("component", "device"),
		Metrics: m, Vision: vision, OriginPatterns: cfg.DeviceOrigins, Version: Version,
		Voice: voiceConversations{h.voice}, Refusals: h.refusals,
	})
	if h.mqtt != nil {
		if err := h.wireMQTT(h.mqtt, mq, trust); err != nil {
			h.closeCore()
			return nil, err
		}
	}
	h.mcp = mcpserver.New(reg, mcpserver.Options{
		DirectLimit: cfg.MCPDirectLimit, Version: Version, Logger: log.With("component", "mcp"),
		MaxSessions: cfg.MCPMaxSessions, SessionTimeout: cfg.MCPSessionTimeout, WriteTimeout: cfg.SSEWriteTimeout,
	})
	h.closeMCP = sync.OnceFunc(h.mcp.Close)
	// No ReadTimeout or WriteTimeout: device WebSockets, event streams and
	// /mcp streams live long. IdleTimeout closes keep-alive connections
	// between requests; streams bound each write themselves.
	m.BuildInfo(Version, runtime.Version())
	m.CounterFunc("xiaozhi_hub_refusals_unreported_total", "Refused devices (WebSocket handshakes, OTA identity refusals, MQTT logins and publishes) neither logged nor recorded as events, because the device they name or their source address was over its limit (10, then one every 5 minutes).",
		func() float64 { return float64(h.refusals.Unreported()) })
	m.Gauge("xiaozhi_hub_devices_known", "Devices the hub knows, online or not.", func() float64 { return float64(reg.KnownCount()) })
	// This node's own codes: in a cluster, Pending would ask every node on
	// each scrape (sum over the nodes for the cluster's count).
	m.Gauge("xiaozhi_hub_activations_pending", "Activation codes this node issued that wait for a person to approve.", func() float64 { return float64(len(trust.LocalPending())) })
	mux := h.routes(st, trust, auth)
	proxies, _ := parseProxies(cfg.TrustedProxies) // checked by Validate
	h.http = &http.Server{
		Handler: fromProxies(proxies, countRequests(m, deviceCORS(mux))), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: cfg.HTTPIdleTimeout,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn), ConnState: h.fresh.track,
	}
	h.http.RegisterOnShutdown(h.fresh.closeAll)
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		h.closeCore()
		return nil, fmt.Errorf("listen on %s: %w", cfg.Listen, err)
	}
	h.ln = ln
	if h.mqtt != nil {
		if err := h.mqtt.start(); err != nil { // devices on MQTT are served from here on
			ln.Close()
			h.closeCore()
			return nil, err
		}
	}
	if err := lock.describe(ln.Addr().String()); err != nil {
		log.Warn("could not write the listen address into the lock file", "err", err)
	}
	return h, nil
}

// routes mounts every endpoint on one mux: the device side (WebSocket, OTA)
// and, through package api, everything for people and programs (REST, SSE,
// agent, MCP; all behind the admin token; the open /healthz and /metrics),
// and the dashboard page at / (which holds no data: it asks for the token
// and uses the API).
func (h *Hub) routes(st *store.Store, trust *ota.Service, auth *oauth.Service) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("GET /xiaozhi/v1/", h.devices)
	trust.Register(mux)
	if h.mqtt != nil && h.mqtt.remote != nil {
		// The external broker checks device logins here (its own secret, not the admin token).
		mux.Handle("POST /mqtt/auth", h.mqttAuth())
	}
	ready := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		return st.Health(ctx)
	}
	var authAPI api.OAuth
	if auth != nil {
		auth.Register(mux) // the OAuth endpoints MCP clients call, no token
		mux.Handle("GET /oauth/consent", dashboard.ConsentHandler())
		authAPI = auth
	}
	api.New(api.Options{
		Registry: h.Registry, Token: h.Token, Metrics: h.Metrics, Logger: h.log.With("component", "api"), Ready: ready,
		MaxStreams: h.cfg.SSEMaxStreams, StreamWriteTimeout: h.cfg.SSEWriteTimeout,
		Trust: trust, Agent: h.agent, MCP: h.mcp, OAuth: authAPI, Cluster: h.clusterInfo(),
	}).Register(mux)
	mux.Handle("GET /{$}", dashboard.Handler())
	mux.Handle("GET /device", dashboard.DeviceHandler())
	return mux
}

// Config is the configuration the hub runs with.
func (h *Hub) Config() Config { return h.cfg }

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
		h.closeCore()
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	return h.Close()
}

// Close stops serving and releases everything. Safe to call after Run.
func (h *Hub) Close() error {
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// Open event streams would hold Shutdown: end them first.
	h.Registry.EndSubscriptions()
	h.closeMCP()
	err := h.http.Shutdown(sctx)
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	h.closeCore()
	return err
}

func (h *Hub) closeCore() {
	if h.mqtt != nil {
		// MQTT devices go offline with the broker ("the hub is shutting
		// down"); their sessions end before the device endpoint closes.
		h.mqtt.stop()
	}
	if h.devices != nil {
		h.devices.Close()
	}
	if h.voice != nil {
		h.voice.Close() // after the sessions: they close their conversations
	}
	if h.closeMCP != nil {
		h.closeMCP()
	}
	if h.agent != nil {
		h.agent.Close()
	}
	h.Registry.Close()
	h.closeCluster() // after the registry: its devices' claims go with it
	if err := h.store.Close(); err != nil {
		h.log.Error("closing store", "err", err)
	}
	h.lock.release() // after the store: the next hub may open it at once
}

func (h *Hub) closeCluster() {
	if h.cluster != nil {
		h.cluster.close()
		h.cluster = nil
	}
}

// deviceSecretFile is the file, in the data directory, of the secret that
// signs device tokens. Deleting it invalidates every token issued.
const deviceSecretFile = "device-secret"

func inProcessToken() string {
	var b [24]byte
	_, _ = rand.Read(b[:])
	return "in-process-" + hex.EncodeToString(b[:])
}
