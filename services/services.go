// Package services lets outside MCP tools in beside the devices' tools:
// services (MCP endpoints that programs connect to by WebSocket with a
// secret token, as to xiaozhi.me's "MCP 接入点") and the MCP servers named
// in the config file (mcp-servers: Streamable HTTP or stdio, through the
// official go-sdk client). On both the hub is the MCP client. A service's
// tools are cached durably (served while it is away, marked offline); a
// call to an offline service fails at once. docs/services.md has the
// details.
//
// The Manager is what the API (api.Services) and, later, the catalog use:
// Services, Tools, Call, and Generation/Changed to notice changes.
package services

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/schema"
)

// Store keeps services and their cached tools (store.Store implements it).
type Store interface {
	LoadServices(ctx context.Context) ([]hub.Service, error)
	SaveService(ctx context.Context, s hub.Service) error
	SaveServiceTools(ctx context.Context, name string, tools []hub.Tool) error
	DeleteService(ctx context.Context, name string) error
}

// Recorder writes a call into the hub's call history
// (registry.Registry.RecordCall); home is the service's ("" the hub's).
type Recorder func(ctx context.Context, rec hub.CallRecord, home string, args json.RawMessage, res hub.CallResult, err error)

// Options configures a Manager.
type Options struct {
	Store  Store // required
	Logger *slog.Logger
	// Record, if set, puts each call into the call history.
	Record Recorder
	// Servers are the configured MCP servers (mcp-servers).
	Servers []ServerConfig
	// PublicURL is the hub's base URL as programs reach it (public-url);
	// empty: the Host of the request that creates the service.
	PublicURL string
	// CallTimeout is a call's default timeout (default 30 s), MaxCallTimeout
	// the longest one may ask for (default 300 s).
	CallTimeout, MaxCallTimeout time.Duration
	// MaxResultBytes bounds a tool's result (default 256 KiB): a larger one
	// fails the call.
	MaxResultBytes int
	// MaxMessageBytes bounds one message from an endpoint's program
	// (default 4 MiB): a larger one closes the connection.
	MaxMessageBytes int64
	// MaxInFlight bounds the calls sent to one service and not yet
	// answered (default 8); up to 64 more wait, then EBUSY.
	MaxInFlight int
	// NoticesPerSecond bounds the messages an endpoint's program sends
	// unasked (notifications, requests, stray replies), after a burst of
	// 4× that (default 5); past it the connection is closed.
	NoticesPerSecond float64
	// PingInterval is how often an endpoint's connection is pinged
	// (default 30 s); one that does not answer within it is closed.
	PingInterval time.Duration
	// Version is sent as the hub's clientInfo.version.
	Version string
	// HomeExists says whether a home id is known (accounts.Service.Exists),
	// for services made for a home; nil: only the hub's own ("").
	HomeExists func(id string) bool
	// Elsewhere, if set, reaches an endpoint service whose program is
	// connected to another node of a cluster (cluster.Node.ServiceCalls):
	// a call to one not connected here goes there instead of failing.
	Elsewhere Elsewhere
}

// Elsewhere runs a call on the node of a cluster that holds the service's
// connection; EOFFLINE when none does.
type Elsewhere interface {
	Call(ctx context.Context, service, tool string, args []byte) (hub.CallResult, error)
}

// Manager holds every service. Its methods are safe for concurrent use.
type Manager struct {
	opts Options
	log  *slog.Logger
	val  *schema.Validator

	ctx    context.Context // ends at Close: configured servers, connections
	cancel context.CancelFunc
	wg     sync.WaitGroup // runners of configured servers, endpoint connections

	mu      sync.Mutex
	entries map[string]*entry
	byHash  map[[sha256.Size]byte]string // endpoint token hash → name
	gen     uint64
	changed chan struct{} // closed at the next change
	closed  bool
}

// entry is one service: its stored record and, while it is connected,
// its link.
type entry struct {
	svc    hub.Service
	link   link   // nil: offline
	server string // serverInfo, once connected
	err    string // why a configured server is not connected
	// closeLink ends the live connection (endpoints: the WebSocket).
	closeLink func(reason string)
}

// link is a live connection to a service, whatever its transport.
type link interface {
	CallTool(ctx context.Context, name string, args []byte) (hub.CallResult, error)
}

// New returns a Manager; Load loads the stored services and starts the
// configured servers.
func New(opts Options) *Manager {
	if opts.Store == nil {
		panic("services: Options.Store is required")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	def(&opts.CallTimeout, 30*time.Second)
	def(&opts.MaxCallTimeout, 300*time.Second)
	def(&opts.MaxResultBytes, 256<<10)
	def(&opts.MaxMessageBytes, 4<<20)
	def(&opts.MaxInFlight, 8)
	def(&opts.NoticesPerSecond, 5)
	def(&opts.PingInterval, 30*time.Second)
	if opts.Version == "" {
		opts.Version = "dev"
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Manager{opts: opts, log: opts.Logger, val: schema.New(), ctx: ctx, cancel: cancel,
		entries: map[string]*entry{}, byHash: map[[sha256.Size]byte]string{}, changed: make(chan struct{})}
}

func def[T int | int64 | float64 | time.Duration](v *T, d T) {
	if *v <= 0 {
		*v = d
	}
}

// Load reads the stored services and starts a runner for each configured
// server (a stored configured server no longer in the config is forgotten).
func (m *Manager) Load(ctx context.Context) error {
	stored, err := m.opts.Store.LoadServices(ctx)
	if err != nil {
		return err
	}
	configured := map[string]ServerConfig{}
	for _, c := range m.opts.Servers {
		configured[c.Name] = c
	}
	m.mu.Lock()
	for _, s := range stored {
		if _, ok := configured[s.Name]; s.Kind == hub.ServiceConfigured && !ok {
			if err := m.opts.Store.DeleteService(ctx, s.Name); err != nil {
				m.log.Warn("forgetting a configured server no longer in the config", "service", s.Name, "err", err)
			}
			continue
		}
		m.entries[s.Name] = &entry{svc: s}
		if len(s.TokenHash) == sha256.Size {
			m.byHash[[sha256.Size]byte(s.TokenHash)] = s.Name
		}
	}
	var fresh []hub.Service
	for _, c := range m.opts.Servers {
		e, ok := m.entries[c.Name]
		if ok && e.svc.Kind != hub.ServiceConfigured {
			// The config wins: an endpoint of that name loses its token.
			delete(m.byHash, [sha256.Size]byte(e.svc.TokenHash))
			ok = false
		}
		if !ok {
			e = &entry{svc: hub.Service{Name: c.Name, Kind: hub.ServiceConfigured, Created: time.Now()}}
			m.entries[c.Name] = e
			fresh = append(fresh, e.svc)
		}
	}
	m.mu.Unlock()
	for _, s := range fresh {
		if err := m.opts.Store.SaveService(ctx, s); err != nil {
			return err
		}
	}
	for _, c := range m.opts.Servers {
		m.wg.Add(1)
		go m.runServer(c)
	}
	return nil
}

// Close ends every connection and configured server and waits for them.
func (m *Manager) Close() {
	m.mu.Lock()
	m.closed = true
	var closers []func(string)
	for _, e := range m.entries {
		if e.closeLink != nil {
			closers = append(closers, e.closeLink)
		}
	}
	m.mu.Unlock()
	m.cancel()
	for _, c := range closers {
		c("the hub is shutting down")
	}
	m.wg.Wait()
	m.val.Close()
}

// Generation counts the changes of what the services offer: a service
// created or deleted, going online or offline, a new tool list.
func (m *Manager) Generation() uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.gen
}

// Changed returns a channel closed once Generation is past since (at
// once when it already is), as registry.ToolsChanged does for devices.
func (m *Manager) Changed(since uint64) <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.gen != since {
		c := make(chan struct{})
		close(c)
		return c
	}
	return m.changed
}

// bumpLocked records a change; m.mu must be held.
func (m *Manager) bumpLocked() {
	m.gen++
	close(m.changed)
	m.changed = make(chan struct{})
}

// Services returns the services p sees (nil p: the hub itself, all), by name.
func (m *Manager) Services(p *hub.Principal) []hub.ServiceView {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := []hub.ServiceView{}
	for _, e := range m.entries {
		if sees(p, e.svc.Home) {
			out = append(out, e.view())
		}
	}
	slices.SortFunc(out, func(a, b hub.ServiceView) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	return out
}

// Held returns the endpoint services whose program is connected here, by
// name (for a cluster node to answer the others' calls to them).
func (m *Manager) Held() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for name, e := range m.entries {
		if e.link != nil && e.svc.Kind == hub.ServiceEndpoint {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// Counts returns how many services there are and how many are online.
func (m *Manager) Counts() (known, online int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, e := range m.entries {
		if e.link != nil {
			online++
		}
	}
	return len(m.entries), online
}

// Service returns one service as p sees it; one p does not see is
// ENOTFOUND exactly as an unknown one.
func (m *Manager) Service(p *hub.Principal, name string) (hub.ServiceView, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.entries[name]
	if !ok || !sees(p, e.svc.Home) {
		return hub.ServiceView{}, notFound(name)
	}
	return e.view(), nil
}

// Tools returns a service's tools (the cached ones while it is offline)
// and whether it is online.
func (m *Manager) Tools(p *hub.Principal, name string) ([]hub.Tool, bool, error) {
	v, err := m.Service(p, name)
	return v.Tools, v.Online, err
}

// view is the service as the API shows it (m.mu held).
func (e *entry) view() hub.ServiceView {
	tools := e.svc.Tools
	if tools == nil {
		tools = []hub.Tool{}
	}
	return hub.ServiceView{Name: e.svc.Name, Kind: e.svc.Kind, Home: e.svc.Home, Online: e.link != nil,
		Tools: tools, Created: e.svc.Created, Server: e.server, Error: e.err}
}

// sees reports whether p may see a service of home: the hub's own ("")
// are everyone's; a home's only its people's.
func sees(p *hub.Principal, home string) bool {
	return p == nil || home == "" || p.Sees(home)
}

// ErrUnknownService is wrapped by the ENOTFOUND error for a service name
// the hub does not know (or the caller does not see).
var ErrUnknownService = errors.New("unknown service")

func notFound(name string) error {
	return &hub.Error{Code: hub.ENOTFOUND, Err: ErrUnknownService, Message: fmt.Sprintf("service %q is not known to the hub", name)}
}
