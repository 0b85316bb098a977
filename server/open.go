package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/agent"
	"github.com/xiaozhi-hub/hub/api"
	"github.com/xiaozhi-hub/hub/dashboard"
	"github.com/xiaozhi-hub/hub/internal/datadir"
	"github.com/xiaozhi-hub/hub/internal/httpx"
	"github.com/xiaozhi-hub/hub/mcpserver"
	"github.com/xiaozhi-hub/hub/oauth"
	"github.com/xiaozhi-hub/hub/opus"
	"github.com/xiaozhi-hub/hub/ota"
	"github.com/xiaozhi-hub/hub/registry"
	"github.com/xiaozhi-hub/hub/secretfile"
	"github.com/xiaozhi-hub/hub/session"
	"github.com/xiaozhi-hub/hub/store"
	"github.com/xiaozhi-hub/hub/voice"
)

// The steps of Open, in order. Each pushes the closers of what it starts.

// openStore takes the data directory (created if missing), the admin
// token and the SQLite store.
func (h *Hub) openStore(ctx context.Context) error {
	lock, err := datadir.Acquire(h.cfg.DataDir)
	if err != nil {
		return err
	}
	h.lock = lock
	h.closers.pushf(lock.Release) // after the store: the next hub may open it at once
	if h.Token, h.tokenCreated, err = secretfile.AdminToken(h.cfg.APIToken, lock.Path(datadir.TokenFile), h.log); err != nil {
		return err
	}
	st, err := store.Open(ctx, lock.Path(datadir.StoreFile), store.Options{MaxCalls: h.cfg.MaxCalls})
	if err != nil {
		return fmt.Errorf("open store: %w", err)
	}
	h.store = st
	h.closers.pushf(func() {
		if err := st.Close(); err != nil {
			h.log.Error("closing store", "err", err)
		}
	})
	return nil
}

// newRegistry makes the registry over the store (in a cluster, over the
// cluster's wrapper of it).
func (h *Hub) newRegistry(context.Context) error {
	var st registry.Store = h.store
	var presence func(string, bool, string)
	if c := h.cluster; c != nil {
		st, presence = c.Node.Store(h.store), c.Node.Presence
	}
	h.Registry = registry.New(st, registry.Options{
		Logger: h.log.With("component", "registry"), Metrics: h.Metrics,
		DefaultCallTimeout: h.cfg.CallTimeout, MaxCallTimeout: h.cfg.MaxCallTimeout, Presence: presence,
	})
	return nil
}

// openTrust opens the device-auth policy and the OTA endpoint, and the
// OAuth server of /mcp (mcp-oauth on). Neither starts anything.
func (h *Hub) openTrust(ctx context.Context) error {
	cfg, c := h.cfg, h.cluster
	var trustStore ota.Store = h.store
	var shareSecret func(context.Context, []byte) ([]byte, error)
	var peers ota.Peers
	if c != nil {
		trustStore, shareSecret, peers = c.Node.TrustStore(h.store), c.Node.ShareSecret, c.Node
	}
	var offer *ota.MQTT
	if h.mqtt != nil {
		offer = &ota.MQTT{}
		offer.Host, offer.Port = h.mqtt.Offer()
	}
	var err error
	h.trust, err = ota.New(ctx, ota.Options{
		Store: trustStore, Registry: h.Registry, SecretPath: h.lock.Path(datadir.DeviceSecretFile),
		ShareSecret: shareSecret, Peers: peers,
		Policy: cfg.DeviceAuth, DeviceTokens: cfg.DeviceTokens, PublicURL: cfg.PublicURL,
		WSVersion: cfg.WSProtocolVersion, CodeTTL: cfg.ActivationExpiry, FirmwareDir: cfg.FirmwareDir,
		RatePerAddr: float64(cfg.OTAChecksPerMinute) / 60, BurstPerAddr: cfg.OTABurst, MaxPendingPerAddr: cfg.ActivationCodesPerAddress,
		NewDevicesPerAddr: cfg.NewDevicesPerAddress, MaxUnusedDevices: cfg.MaxUnusedDevices,
		MQTT: offer, Logger: h.log.With("component", "ota"), OnCheck: h.Metrics.OTACheck, Refusals: h.refusals,
	})
	if err != nil {
		return err
	}
	if cfg.MCPOAuth != "on" {
		return nil
	}
	var oauthStore oauth.Store = h.store
	if c != nil {
		oauthStore = c.Node.OAuthStore(h.store)
	}
	if h.oauth, err = oauth.New(ctx, oauthStore, oauth.Options{PublicURL: cfg.PublicURL, Logger: h.log.With("component", "oauth")}); err != nil {
		return fmt.Errorf("oauth: %w", err)
	}
	if c != nil {
		c.Node.ServeOAuth(h.oauth)
	}
	return nil
}

// loadRegistry loads the devices and starts the registry's background
// persistence and, in a cluster, the node's part in it.
func (h *Hub) loadRegistry(ctx context.Context) error {
	h.closers.pushf(h.Registry.Close) // after every user of it; before the cluster: its devices' claims go with it
	if err := h.Registry.Load(ctx); err != nil {
		return err
	}
	// A deleted device loses its approval and tokens: deleting means
	// "this device is not ours", not "forget its cache until it reconnects".
	h.Registry.OnDelete(func(ctx context.Context, id string) error {
		if _, err := h.trust.Revoke(ctx, id); err != nil && hub.ErrorCode(err) != hub.ENOTFOUND {
			return err
		}
		return nil
	})
	c := h.cluster
	if c == nil {
		return nil
	}
	clusterMetrics(h.Metrics, c)
	if err := c.Node.ServeTrust(h.trust); err != nil {
		return err
	}
	return c.Node.Start(ctx, h.Registry)
}

// openServices makes the agent, the MCP server, the voice engine and the
// device endpoint; none starts anything before it is used.
func (h *Hub) openServices(vopts voice.Options) error {
	cfg, reg, m := h.cfg, h.Registry, h.Metrics
	// The agent's model is the live settings' (live.go): it follows them.
	h.agent = agent.NewWithProvider(reg, agent.Config{
		Model: h.live.Current().Agent.Model, DirectLimit: cfg.MCPDirectLimit, Services: h.services, Logger: h.log.With("component", "agent"), Shared: sharedHistory(h.cluster),
		OnRun: func(r agent.RunRecord) {
			m.AgentRun(r.Outcome, r.DurationMs/1000, r.Usage.InputTokens, r.Usage.OutputTokens)
		},
	}, h.live.LLM())
	h.closers.pushf(h.agent.Close)
	h.mcp = mcpserver.New(reg, mcpserver.Options{
		DirectLimit: cfg.MCPDirectLimit, Version: Version, Logger: h.log.With("component", "mcp"),
		MaxSessions: cfg.MCPMaxSessions, SessionTimeout: cfg.MCPSessionTimeout, WriteTimeout: cfg.SSEWriteTimeout,
		People: h.accounts, Services: h.services, Catalog: h.agent.Catalog(), // one cache of the devices' tools for both
	})
	h.closeMCP = sync.OnceFunc(h.mcp.Close)
	h.closers.pushf(h.closeMCP)
	vopts.Brain, vopts.Logger = agentBrain{h.agent, reg}, h.log.With("component", "voice")
	vopts.OnTurn = func(r voice.TurnRecord) { // a device event, and metrics
		m.VoiceTurn(r.Outcome, r.RecognitionMs/1000, r.FirstSentenceMs/1000, r.FirstAudioMs/1000)
		reg.Record(hub.EventVoiceTurn, r.DeviceID, r)
	}
	brain := personaBrain{next: vopts.Brain, llm: h.live.LLM(), reg: reg, personas: h.personas, voices: &sync.Map{}}
	vopts.Brain, vopts.Parts = brain, h.liveParts
	vopts.VoiceOf = brain.voiceOf // a person's choice for the device (PATCH voice), else its persona's
	vopts.LanguageOf = h.trust.Language
	h.voice = voice.New(vopts)
	h.closers.pushf(h.voice.Close) // after the sessions: they close their conversations
	h.devices = session.New(session.Options{
		Registry: reg, Authorize: h.trust.Authorize, Logger: h.log.With("component", "device"),
		Metrics: m, Vision: cfg.Vision(), OriginPatterns: cfg.DeviceOrigins, Version: Version,
		Voice: rememberingConversations{voiceConversations{h.voice}, h.personas.Ended}, Refusals: h.refusals,
	})
	h.closers.pushf(h.devices.Close)
	h.exportMetrics()
	return nil
}

// exportMetrics registers the hub's own gauges and counters.
func (h *Hub) exportMetrics() {
	m, reg := h.Metrics, h.Registry
	m.BuildInfo(Version, opus.Implementation)
	m.CounterFunc("xiaozhi_hub_refusals_unreported_total", "Refused devices (WebSocket handshakes, OTA identity refusals, MQTT logins and publishes) neither logged nor recorded as events, because the device they name or their source address was over its limit (10, then one every 5 minutes).",
		func() float64 { return float64(h.refusals.Unreported()) })
	m.Gauge("xiaozhi_hub_voice_conversations", "Conversations open (a device's hello answered, not yet ended).", func() float64 { return float64(h.voice.Active()) })
	m.Gauge("xiaozhi_hub_devices_known", "Devices the hub knows, online or not.", func() float64 { return float64(reg.KnownCount()) })
	// This node's own codes: in a cluster, Pending would ask every node on
	// each scrape (sum over the nodes for the cluster's count).
	m.Gauge("xiaozhi_hub_activations_pending", "Activation codes this node issued that wait for a person to approve.", func() float64 { return float64(len(h.trust.LocalPending())) })
}

// listen makes the HTTP server and binds its listener; Run serves it.
func (h *Hub) listen(context.Context) error {
	proxies, _ := httpx.ParseProxies(h.cfg.TrustedProxies) // checked by Validate
	var fresh httpx.NewConns                               // connections with no request yet, closed at shutdown
	// No ReadTimeout or WriteTimeout: device WebSockets, event streams and
	// /mcp streams live long. IdleTimeout closes keep-alive connections
	// between requests; streams bound each write themselves.
	h.http = &http.Server{
		Handler:           httpx.FromProxies(proxies, httpx.CountRequests(h.Metrics, ota.CORS(h.routes()))),
		ReadHeaderTimeout: 10 * time.Second, IdleTimeout: h.cfg.HTTPIdleTimeout,
		ErrorLog: slog.NewLogLogger(h.log.Handler(), slog.LevelWarn), ConnState: fresh.Track,
	}
	h.http.RegisterOnShutdown(fresh.CloseAll)
	ln, err := net.Listen("tcp", h.cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", h.cfg.Listen, err)
	}
	h.ln = ln
	h.closers.push(h.shutdownHTTP)
	return nil
}

// shutdownHTTP ends the event streams and /mcp sessions (they would hold
// Shutdown), then shuts the HTTP server down, waiting up to 5 s for the
// requests in flight, and closes the listener (if Run never served it).
func (h *Hub) shutdownHTTP() error {
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	h.Registry.EndSubscriptions()
	h.closeMCP()
	err := h.http.Shutdown(sctx)
	_ = h.ln.Close()
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// routes mounts every endpoint on one mux: the device side (WebSocket, OTA)
// and, through package api, everything for people and programs (REST, SSE,
// agent, MCP; all behind the admin token; the open /healthz and /metrics),
// and the dashboard page at / (which holds no data: it asks for the token
// and uses the API).
func (h *Hub) routes() *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("GET /xiaozhi/v1/", h.devices)
	h.mountServices(mux)
	h.trust.Register(mux)
	if h.mqtt != nil {
		if auth := h.mqtt.AuthHandler(); auth != nil {
			// The external broker checks device logins here (its own secret, not the admin token).
			mux.Handle("POST /mqtt/auth", auth)
		}
	}
	ready := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		return h.store.Health(ctx)
	}
	var authAPI api.OAuth
	if h.oauth != nil {
		h.oauth.Register(mux) // the OAuth endpoints MCP clients call, no token
		mux.Handle("GET /oauth/consent", dashboard.ConsentHandler())
		authAPI = h.oauth
	}
	api.New(api.Options{
		Registry: h.Registry, Token: h.Token, Metrics: h.Metrics, Logger: h.log.With("component", "api"), Ready: ready,
		MaxStreams: h.cfg.SSEMaxStreams, StreamWriteTimeout: h.cfg.SSEWriteTimeout,
		Trust: h.trust, Agent: liveAgent{h.agent, h.live.LLM()}, MCP: h.mcp, OAuth: authAPI, Cluster: h.clusterInfo(), Accounts: h.accounts, Services: h.services,
		Settings: h.live, Personas: h.personas,
	}).Register(mux)
	mux.Handle("GET /{$}", dashboard.Handler())
	mux.Handle("GET /device", dashboard.DeviceHandler())
	return mux
}
