// Package ota is how real devices find, trust and update through the hub
// (docs/protocol.md §2):
//
//	POST /xiaozhi/ota/                         the check every device makes at boot:
//	                                           server time, WebSocket URL, token and
//	                                           protocol version, firmware offer,
//	                                           activation code for unknown devices
//	POST /xiaozhi/ota/activate                 the device polls: 202 pending, 200 approved
//	GET  /xiaozhi/ota/firmware/{board}/{file}  firmware downloads (with Content-Length)
//
// and, for people, the methods the admin API (package api) serves behind
// the admin token: Pending, Approve, TrustOf, Admitted, Revoke and Rebind.
//
// The WebSocket tokens it issues are HMAC-SHA256 signatures, with a secret
// kept in the data directory, over the Device-Id, the Client-Id and the
// device's token generation; revoking a device changes its generation. A
// device is bound to the Client-Id (and serial) it presented when approved
// or first connected (identity.go). Authorize is the
// device endpoint's policy (session.Options.Authorize).
package ota

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/xiaozhi-hub/hub/internal/refusals"
	"github.com/xiaozhi-hub/hub/registry"
)

// Device-auth policies.
const (
	// PolicyOpen admits every device (the OTA answer still carries a token,
	// so that switching to PolicyToken later needs no reboot).
	PolicyOpen = "open"
	// PolicyToken admits devices with a token the OTA endpoint issued
	// (to any device that asks) or a configured device token.
	PolicyToken = "token"
	// PolicyActivation admits only devices a person approved (with the
	// token issued after approval) or holding a configured device token.
	PolicyActivation = "activation"
)

// Options configures a Service. Store and SecretPath are required.
type Options struct {
	Store Store
	// Registry, if set, learns approved devices at once (so that they are
	// listed, with the name given at approval, before they connect).
	Registry *registry.Registry
	// SecretPath is the file holding the token-signing secret, generated
	// (mode 0600) when missing.
	SecretPath string
	// Policy is PolicyOpen, PolicyToken or PolicyActivation (the default).
	Policy string
	// DeviceTokens are configured tokens accepted from any device
	// (with PolicyToken and PolicyActivation).
	DeviceTokens []string
	// PublicURL is the hub's base URL as devices reach it
	// (http://host:port or https://…); the WebSocket and firmware URLs are
	// built from it. Empty: from the Host of each OTA request.
	PublicURL string
	// MQTT, when set, offers devices the hub's MQTT broker in the OTA
	// answer (see MQTT).
	MQTT *MQTT
	// WSVersion is the binary protocol version devices are told to use
	// (1, 2 or 3; default 1).
	WSVersion int
	// CodeTTL is how long an activation code stays valid (default 10 min).
	CodeTTL time.Duration
	// MaxPending bounds the activations waiting at once (default
	// MaxPendingCodes);
	// MaxPendingPerAddr the codes issued to one source address (default 8).
	MaxPending, MaxPendingPerAddr int
	// RatePerAddr and BurstPerAddr bound the OTA checks and /activate
	// polls of one source address (default 2 a second, bursts of 30).
	RatePerAddr  float64
	BurstPerAddr int
	// NewDevicesPerAddr bounds the devices new to the hub (no trust
	// record, not in the registry) that one source address may bring in an
	// hour, all of them at once at most (default 10): under PolicyToken and
	// PolicyOpen each gets a token from the OTA check, so each can log in.
	// Over it, the check gets 429 (PolicyToken), or an answer without a
	// token (PolicyOpen, whose WebSocket admits any device). Devices the
	// hub knows are never counted. PolicyActivation issues no token to a
	// new device: MaxPendingPerAddr bounds its codes.
	NewDevicesPerAddr int
	// MaxUnusedDevices bounds the devices kept that never did anything
	// useful (prune.go; default 1000), and UnusedDeviceExpiry is how long
	// one is kept after it was last seen (default 24 h).
	MaxUnusedDevices   int
	UnusedDeviceExpiry time.Duration
	// FirmwareDir holds firmware images as <board>/<version>.bin; empty:
	// no firmware is offered.
	FirmwareDir string
	// Location's offset is sent as server_time.timezone_offset: the device
	// clock shows local time (default time.Local).
	Location *time.Location
	Logger   *slog.Logger
	Now      func() time.Time // default time.Now
	// OnCheck, if set, learns the outcome of each OTA check: admitted,
	// activation, refused or rate_limited (for metrics).
	OnCheck func(outcome string)
	// Refusals limits the logging and recording of identity refusals per
	// device and per source address, shared with the hub's other
	// transports (nil: every refusal is reported).
	Refusals *refusals.Reports

	// In a cluster (package cluster): ShareSecret, if set, is given the
	// node's own device-token secret and returns the one all nodes use;
	// Peers, if set, are the other nodes, asked for activation codes this
	// node did not issue.
	ShareSecret func(ctx context.Context, local []byte) ([]byte, error)
	Peers       Peers
}

// MaxPendingCodes is the default bound on the activations waiting at once.
const MaxPendingCodes = 1000

// Defaults of Options.NewDevicesPerAddr and Options.MaxUnusedDevices.
const (
	DefaultNewDevicesPerAddr = 10
	DefaultMaxUnusedDevices  = 1000
)

// Service is the OTA and activation endpoint and the device-auth policy. Its
// methods are safe for concurrent use. It runs no goroutines: codes expire
// when they are next looked at.
type Service struct {
	opts   Options
	log    *slog.Logger
	secret []byte
	public *url.URL // nil: derive from requests
	fw     *firmwareDir

	limiter    *rateLimiter    // per source address, on the device-facing routes
	newDevices *newDeviceQuota // per source address, new devices given a token

	pruneMu   sync.Mutex // one pruning pass at a time (prune.go)
	lastSweep time.Time  // of the pass that removed expired records
	// unusedAtMost bounds the unused devices (prune.go, pruneLocked): the
	// count at countedAt plus the new devices since; counts is how many
	// times they were counted. Under pruneMu.
	unusedAtMost int
	countedAt    time.Time
	counts       int

	adminMu sync.Mutex // serialises approvals, revocations and bindings

	mu      sync.RWMutex
	trust   map[string]Trust // by device id, without SystemInfo
	pending pendingSet
	// boundAt is when this process bound a device at its first connection
	// (prune.go: a record is kept a while before its device connects).
	boundAt map[string]time.Time
}

// New loads (or creates) the signing secret and every trust record.
func New(ctx context.Context, opts Options) (*Service, error) {
	if opts.Store == nil || opts.SecretPath == "" {
		return nil, errors.New("ota: Store and SecretPath are required")
	}
	if opts.Policy == "" {
		opts.Policy = PolicyActivation
	}
	switch opts.Policy {
	case PolicyOpen, PolicyToken, PolicyActivation:
	default:
		return nil, fmt.Errorf("ota: unknown device-auth policy %q", opts.Policy)
	}
	if opts.WSVersion == 0 {
		opts.WSVersion = 1
	}
	if opts.WSVersion < 1 || opts.WSVersion > 3 {
		return nil, fmt.Errorf("ota: WebSocket protocol version %d is not 1, 2 or 3", opts.WSVersion)
	}
	if opts.MQTT != nil {
		m := *opts.MQTT
		if err := m.check(); err != nil {
			return nil, fmt.Errorf("ota: %w", err)
		}
		opts.MQTT = &m
	}
	if opts.CodeTTL <= 0 {
		opts.CodeTTL = 10 * time.Minute
	}
	if opts.MaxPending <= 0 {
		opts.MaxPending = MaxPendingCodes
	}
	if opts.MaxPendingPerAddr <= 0 {
		opts.MaxPendingPerAddr = 8
	}
	if opts.RatePerAddr <= 0 {
		opts.RatePerAddr = 2
	}
	if opts.BurstPerAddr <= 0 {
		opts.BurstPerAddr = 30
	}
	if opts.NewDevicesPerAddr <= 0 {
		opts.NewDevicesPerAddr = DefaultNewDevicesPerAddr
	}
	if opts.MaxUnusedDevices <= 0 {
		opts.MaxUnusedDevices = DefaultMaxUnusedDevices
	}
	if opts.UnusedDeviceExpiry <= 0 {
		opts.UnusedDeviceExpiry = 24 * time.Hour
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Location == nil {
		opts.Location = time.Local
	}
	if opts.OnCheck == nil {
		opts.OnCheck = func(string) {}
	}
	s := &Service{opts: opts, log: opts.Logger, trust: map[string]Trust{}, pending: newPendingSet(),
		limiter: newRateLimiter(opts.RatePerAddr, opts.BurstPerAddr), newDevices: newNewDeviceQuota(opts.NewDevicesPerAddr),
		boundAt: map[string]time.Time{}}
	if opts.PublicURL != "" {
		u, err := ParsePublicURL(opts.PublicURL)
		if err != nil {
			return nil, err
		}
		s.public = u
	}
	var err error
	if s.secret, err = loadSecret(opts.SecretPath, s.log); err != nil {
		return nil, err
	}
	if opts.ShareSecret != nil {
		if s.secret, err = opts.ShareSecret(ctx, s.secret); err != nil {
			return nil, fmt.Errorf("device secret: %w", err)
		}
	}
	if opts.FirmwareDir != "" {
		if s.fw, err = openFirmwareDir(opts.FirmwareDir, s.log); err != nil {
			return nil, err
		}
	}
	recs, err := opts.Store.LoadTrust(ctx)
	if err != nil {
		return nil, fmt.Errorf("load device trust: %w", err)
	}
	for _, t := range recs {
		t.SystemInfo = nil
		s.trust[t.DeviceID] = t
	}
	return s, nil
}

// ParsePublicURL checks a public-url setting: http or https (ws and wss
// are accepted too), a host, and no query.
func ParsePublicURL(raw string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("public-url: %q is not a base URL such as http://192.168.1.10:8000", raw)
	}
	switch u.Scheme {
	case "http", "https":
	case "ws":
		u.Scheme = "http"
	case "wss":
		u.Scheme = "https"
	default:
		return nil, fmt.Errorf("public-url: %q must start with http:// or https://", raw)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	return u, nil
}

// Register mounts the device-facing routes (no admin token: devices send
// none) on mux.
func (s *Service) Register(mux *http.ServeMux) {
	for _, p := range []string{"/xiaozhi/ota/{$}", "/xiaozhi/ota"} {
		mux.HandleFunc("POST "+p, s.serveCheck)
		mux.HandleFunc("GET "+p, s.serveCheck) // firmware sends GET only with no body
	}
	mux.HandleFunc("POST /xiaozhi/ota/activate", s.serveActivate)
	mux.HandleFunc("GET /xiaozhi/ota/firmware/{board}/{file}", s.serveFirmware)
}

// Policy returns the device-auth policy in force.
func (s *Service) Policy() string { return s.opts.Policy }

// Admitted reports whether the policy admits the device to the WebSocket
// endpoint once it holds a token (see trustedLocked).
func (s *Service) Admitted(deviceID string) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.trustedLocked(deviceID)
}

// trusted reports whether the policy admits the device to the WebSocket
// endpoint once it holds a token: always, except that PolicyActivation
// needs an approval.
func (s *Service) trustedLocked(id string) bool {
	return s.opts.Policy != PolicyActivation || !s.trust[id].Approved.IsZero()
}

func newGeneration() int64 {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return int64(binary.BigEndian.Uint64(b[:])>>1) | 1 // positive, never 0
}
