// Package mcpserver serves the hub's devices to outside AI agents (Claude
// Desktop, Cursor, any MCP client) over MCP Streamable HTTP, using the
// official go-sdk.
//
// With few devices (Options.DirectLimit) every device tool is a tool of the
// server, named per device by package catalog (d5kq3m2xa_self-lamp-turn_on),
// and the server sends notifications/tools/list_changed whenever devices
// come, go or change their tools. With more devices the server offers a
// small fixed set instead: search_devices, get_device, call_device_tool and
// send_iot_commands. Failed calls (invalid arguments, offline devices,
// device errors) are tool results with isError true and a message the model
// can act on.
//
// Each MCP session is its principal's (hub.PrincipalFrom of the request
// that opened it: the admin, a person's token, an OAuth client acting for
// a person): its tools are only those of the devices that principal sees,
// and its calls carry the principal, so the registry applies its rights
// and records who asked. The principal of every later request of the
// session replaces the one before (the API resolves it afresh each time),
// so a person who loses a home loses its devices' tools at the next
// request; a request from anyone else is answered as for an unknown
// session.
//
// The handler does not authenticate: mount it behind the hub's
// credentials check, e.g.
//
//	mcpSrv := mcpserver.New(reg, mcpserver.Options{Version: server.Version})
//	defer mcpSrv.Close()
//	api.New(api.Options{Registry: reg, Token: token, MCP: mcpSrv}).Register(mux) // /mcp behind the token
package mcpserver

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/catalog"
	"github.com/xiaozhi-hub/hub/internal/httperr"
	"github.com/xiaozhi-hub/hub/registry"
)

// Options configure the MCP server. The zero value is usable.
type Options struct {
	// DirectLimit is the largest number of (online) devices whose tools are
	// offered directly; above it the fixed hub tools are offered. 0 means 8;
	// negative means always the fixed set.
	DirectLimit int
	// AllowUserOnly offers user-only device tools (reboot, firmware upgrade,
	// unlock, …). Off by default.
	AllowUserOnly bool
	// IncludeOffline offers offline devices' tools too in direct mode.
	IncludeOffline bool
	// MaxResultBytes caps one tool result's text (default 16 KiB).
	MaxResultBytes int
	// CallTimeout bounds each device call (0: the registry's default).
	CallTimeout time.Duration
	// SessionTimeout closes MCP sessions idle this long (default 10 min).
	SessionTimeout time.Duration
	// MaxSessions caps the MCP sessions open at once (default 64): a new
	// session beyond it is refused with 429 and code "too_many_requests".
	MaxSessions int
	// WriteTimeout drops a client that takes no write of a response (or
	// stream) within it (default 15 s).
	WriteTimeout time.Duration
	// Debounce gathers registry events for this long before the tool list
	// is recomputed (default 100 ms).
	Debounce time.Duration
	// DisableLocalhostProtection turns off the SDK's DNS-rebinding check
	// (requests to a loopback address with a non-loopback Host header are
	// refused). Set it when a reverse proxy on the same host forwards /mcp.
	DisableLocalhostProtection bool
	// People, if set, are followed: when people, homes or memberships
	// change, each open session's person is looked up again, so that one
	// who loses a home loses its tools at once
	// (notifications/tools/list_changed), before their next request.
	People People
	// Services, if set, are offered beside the devices (catalog.Options.Services);
	// their changes (a service created, deleted, going on- or offline, new
	// tools) update the sessions' lists as the devices' do.
	Services catalog.Services
	// Catalog, if set, is a catalog over the same registry and Services
	// (the agent's): when it offers user-only tools as AllowUserOnly says,
	// the server's catalog shares its cache of every device's tools and its
	// search index (catalog.Catalog.With) instead of keeping its own.
	Catalog *catalog.Catalog
	// Version is reported to clients in serverInfo.
	Version string
	Logger  *slog.Logger
}

// People are the hub's people (accounts.Service) as the server follows
// them.
type People interface {
	Generation() uint64
	// Changed returns a channel closed at the next change after since.
	Changed(since uint64) <-chan struct{}
	// Principal returns a user's principal as of now, or false.
	Principal(user string) (*hub.Principal, bool)
}

// Server is the MCP endpoint. It is an http.Handler; Close stops it.
type Server struct {
	opts    Options
	log     *slog.Logger
	cat     *catalog.Catalog
	reg     *registry.Registry
	handler http.Handler

	openMu  sync.Mutex
	opening int // initialize requests being served; guarded by openMu

	mu       sync.Mutex
	sessions map[string]*session // by Mcp-Session-Id, while open (swept)
	syncs    atomic.Int64        // tool lists computed (for tests)

	quit chan struct{} // closed by Close
	done chan struct{} // closed when the watcher has returned
	// runMu guards running (the watcher was started: by the first request,
	// so that New starts nothing) and closed.
	runMu   sync.Mutex
	running bool
	closed  bool
}

const instructions = `This server controls the xiaozhi voice devices (smart speakers, lamps and other ESP32 gadgets) known to a xiaozhi-hub.
Find devices with search_devices (by room and kind of device, in any language, e.g. "客厅 灯"), inspect one with get_device, then call its tools.
Device tools check their arguments against the tool's schema; errors come back as tool results that say what to fix.
Devices can be offline: calls to them then fail until they reconnect.
Services (outside tools such as a calculator) are offered the same way: their tools' names start with "s", and search_devices finds them as device_id "service:<name>".`

// New returns an MCP server over reg. It starts nothing: it follows the
// registry's changes from its first request on (before that, no MCP client
// is there to be told of them). Call Close when done.
func New(reg *registry.Registry, opts Options) *Server {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Debounce <= 0 {
		opts.Debounce = 100 * time.Millisecond
	}
	if opts.SessionTimeout <= 0 {
		opts.SessionTimeout = 10 * time.Minute
	}
	if opts.MaxSessions <= 0 {
		opts.MaxSessions = 64
	}
	if opts.WriteTimeout <= 0 {
		opts.WriteTimeout = 15 * time.Second
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	s := &Server{
		opts:     opts,
		log:      opts.Logger,
		cat:      newCatalog(reg, opts),
		reg:      reg,
		sessions: map[string]*session{},
		quit:     make(chan struct{}),
		done:     make(chan struct{}),
	}
	s.handler = mcp.NewStreamableHTTPHandler(s.serverFor, &mcp.StreamableHTTPOptions{
		Logger:                     opts.Logger,
		SessionTimeout:             opts.SessionTimeout,
		DisableLocalhostProtection: opts.DisableLocalhostProtection,
	})
	return s
}

// ServeHTTP serves MCP Streamable HTTP (POST, GET and DELETE on one path).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.start()
	p := hub.PrincipalFrom(r.Context())
	if id := r.Header.Get("Mcp-Session-Id"); id != "" {
		if ss := s.lookup(id); ss != nil {
			if ss.owner != owner(p) {
				// Someone else's session is, to them, no session at all:
				// the SDK's answer for an unknown one.
				http.Error(w, "session not found", http.StatusNotFound)
				return
			}
			ss.p.Store(p) // the credential was checked again for this request
			s.sync(ss)
		}
	} else if r.Method == http.MethodPost {
		// A new session (initialize). Sessions being opened count too, so
		// that concurrent requests cannot overtake the cap.
		s.openMu.Lock()
		s.sweep()
		n := s.sessionCount() + s.opening
		if n >= s.opts.MaxSessions {
			s.openMu.Unlock()
			w.Header().Set("Retry-After", "60")
			httperr.Write(w, slog.Default(), hub.Errorf(hub.ETOOMANY, "%d MCP sessions are already open, the most the hub allows (setting mcp-max-sessions); "+
				"close one (DELETE /mcp with its Mcp-Session-Id) or wait for idle ones to expire (mcp-session-timeout, %v)", n, s.opts.SessionTimeout))
			return
		}
		s.opening++
		s.openMu.Unlock()
		slot := &opening{p: p}
		r = r.WithContext(context.WithValue(r.Context(), openingKey{}, slot))
		defer func() {
			s.openMu.Lock()
			s.opening--
			if slot.ss != nil {
				slot.ss.opened = true
			}
			s.openMu.Unlock()
		}()
	}
	withWriteDeadlines(s.handler, s.opts.WriteTimeout, w, r)
}

// sessionCount counts the open MCP sessions.
func (s *Server) sessionCount() int {
	n := 0
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ss := range s.sessions {
		n += ss.live()
	}
	return n
}

// Close stops following the registry and closes every MCP session.
func (s *Server) Close() {
	s.runMu.Lock()
	started, closed := s.running, s.closed
	s.running, s.closed = false, true
	s.runMu.Unlock()
	if closed {
		return
	}
	close(s.quit)
	if started {
		<-s.done
	}
	s.cat.Close()
	for _, ss := range s.open() {
		for cs := range ss.srv.Sessions() {
			_ = cs.Close()
		}
	}
}

// start starts the watcher, once, unless the server is closed.
func (s *Server) start() {
	s.runMu.Lock()
	defer s.runMu.Unlock()
	if s.running || s.closed {
		return
	}
	s.running = true
	go s.watch()
}

// Catalog returns the catalog the server offers (for tests and tools).
func (s *Server) Catalog() *catalog.Catalog { return s.cat }

// watch recomputes the open sessions' tool lists after registry changes
// (and their people after changes of people), gathering bursts (a device
// connecting reports online, then its tools) into one update: it waits
// Debounce after the first change.
func (s *Server) watch() {
	defer close(s.done)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	seen := s.reg.ToolsGeneration()
	var people, svcs <-chan struct{} // nil (never ready) without People, Services
	var peopleSeen, svcSeen uint64
	if s.opts.People != nil {
		peopleSeen = s.opts.People.Generation()
	}
	if s.opts.Services != nil {
		svcSeen = s.opts.Services.Generation()
	}
	for {
		if s.opts.People != nil {
			people = s.opts.People.Changed(peopleSeen)
		}
		if s.opts.Services != nil {
			svcs = s.opts.Services.Changed(svcSeen)
		}
		select {
		case <-s.quit:
			return
		case <-people:
			peopleSeen = s.opts.People.Generation()
			for _, ss := range s.open() {
				s.relook(ss)
			}
			continue
		case <-s.reg.ToolsChanged(seen):
		case <-svcs:
		}
		timer.Reset(s.opts.Debounce)
		select {
		case <-s.quit:
			return
		case <-timer.C:
		}
		seen = s.reg.ToolsGeneration()
		if s.opts.Services != nil {
			svcSeen = s.opts.Services.Generation()
		}
		s.openMu.Lock()
		s.sweep()
		s.openMu.Unlock()
		for _, ss := range s.open() {
			s.sync(ss) // the SDK tells the session its list changed
		}
	}
}

func title(t catalog.Tool) string {
	switch t.Name {
	case catalog.ToolSearchDevices:
		return "Search devices"
	case catalog.ToolGetDevice:
		return "Get device"
	case catalog.ToolCallDeviceTool:
		return "Call a device tool"
	case catalog.ToolSendIoTCommands:
		return "Send IoT commands"
	}
	if t.Kind == catalog.KindService {
		return t.Target + " · service " + t.Service
	}
	return t.Target + " · " + t.DeviceID
}

// newCatalog is the server's catalog: opts.Catalog's cache with the
// server's settings when it can be shared, else one of its own.
func newCatalog(reg *registry.Registry, opts Options) *catalog.Catalog {
	copts := catalog.Options{
		AllowUserOnly: opts.AllowUserOnly, DirectLimit: opts.DirectLimit, IncludeOffline: opts.IncludeOffline,
		MaxResultBytes: opts.MaxResultBytes, CallTimeout: opts.CallTimeout, Caller: "mcp", Services: opts.Services,
	}
	if opts.Catalog != nil && opts.Catalog.Options().AllowUserOnly == opts.AllowUserOnly {
		return opts.Catalog.With(copts)
	}
	return catalog.New(reg, copts)
}
