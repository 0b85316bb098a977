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
// The handler does not authenticate: mount it behind the hub's bearer
// token, e.g.
//
//	mcpSrv := mcpserver.New(reg, mcpserver.Options{Version: server.Version})
//	defer mcpSrv.Close()
//	api.New(api.Options{Registry: reg, Token: token, MCP: mcpSrv}).Register(mux) // /mcp behind the token
package mcpserver

import (
	"context"
	"fmt"
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
	// Version is reported to clients in serverInfo.
	Version string
	Logger  *slog.Logger
}

// Server is the MCP endpoint. It is an http.Handler; Close stops it.
type Server struct {
	opts    Options
	log     *slog.Logger
	cat     *catalog.Catalog
	mcp     *mcp.Server
	handler http.Handler

	openMu  sync.Mutex
	opening int // initialize requests being served; guarded by openMu
	mu      sync.Mutex
	exposed map[string]string // tool name → fingerprint of what was added
	// synced is the registry's tools generation the exposed tools were
	// computed at (noSync before the first sync). While no MCP session is
	// open, the tools are brought up to date by the next request instead,
	// so a hub that no outside agent uses never builds the catalog.
	reg    *registry.Registry
	synced atomic.Uint64

	quit chan struct{} // closed by Close
	done chan struct{} // closed when the watcher has returned
	// runMu guards running (the watcher was started: by the first request,
	// so that New starts nothing) and closed.
	runMu   sync.Mutex
	running bool
	closed  bool
}

// noSync is synced before the first sync (no generation reaches it).
const noSync = ^uint64(0)

const instructions = `This server controls the xiaozhi voice devices (smart speakers, lamps and other ESP32 gadgets) known to a xiaozhi-hub.
Find devices with search_devices (by room and kind of device, in any language, e.g. "客厅 灯"), inspect one with get_device, then call its tools.
Device tools check their arguments against the tool's schema; errors come back as tool results that say what to fix.
Devices can be offline: calls to them then fail until they reconnect.`

// New returns an MCP server over reg. It starts nothing: it follows the
// registry's events from its first request on (before that, no MCP client
// is there to be told of changes, and the first request syncs anyway).
// Call Close when done.
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
		opts: opts,
		log:  opts.Logger,
		cat: catalog.New(reg, catalog.Options{
			AllowUserOnly: opts.AllowUserOnly, DirectLimit: opts.DirectLimit, IncludeOffline: opts.IncludeOffline,
			MaxResultBytes: opts.MaxResultBytes, CallTimeout: opts.CallTimeout, Caller: "mcp",
		}),
		exposed: map[string]string{},
		reg:     reg,
		quit:    make(chan struct{}),
		done:    make(chan struct{}),
	}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "xiaozhi-hub", Title: "xiaozhi-hub devices", Version: opts.Version},
		&mcp.ServerOptions{
			Instructions: instructions,
			Logger:       opts.Logger,
			Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}},
		})
	s.handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp }, &mcp.StreamableHTTPOptions{
		Logger:                     opts.Logger,
		SessionTimeout:             opts.SessionTimeout,
		DisableLocalhostProtection: opts.DisableLocalhostProtection,
	})
	s.synced.Store(noSync) // the first request syncs
	return s
}

// ServeHTTP serves MCP Streamable HTTP (POST, GET and DELETE on one path).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.start()
	s.syncIfStale()
	if r.Method == http.MethodPost && r.Header.Get("Mcp-Session-Id") == "" {
		// A new session (initialize). Sessions being opened count too, so
		// that concurrent requests cannot overtake the cap.
		s.openMu.Lock()
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
		defer func() {
			s.openMu.Lock()
			s.opening--
			s.openMu.Unlock()
		}()
	}
	withWriteDeadlines(s.handler, s.opts.WriteTimeout, w, r)
}

func (s *Server) sessionCount() int {
	n := 0
	for range s.mcp.Sessions() {
		n++
	}
	return n
}

// hasSessions reports whether any MCP client is connected.
func (s *Server) hasSessions() bool {
	for range s.mcp.Sessions() {
		return true
	}
	return false
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
	for ss := range s.mcp.Sessions() {
		_ = ss.Close()
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

// watch recomputes the tool list after registry changes, for the open
// sessions, gathering bursts (a device connecting reports online, then its
// tools) into one update: it waits Debounce after the first change.
func (s *Server) watch() {
	defer close(s.done)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	seen := s.reg.ToolsGeneration()
	for {
		select {
		case <-s.quit:
			return
		case <-s.reg.ToolsChanged(seen):
		}
		timer.Reset(s.opts.Debounce)
		select {
		case <-s.quit:
			return
		case <-timer.C:
		}
		seen = s.reg.ToolsGeneration()
		if s.hasSessions() {
			s.syncIfStale() // the SDK tells the sessions the list changed
		}
	}
}

// syncIfStale syncs when the registry's tools may have changed since the
// last sync.
func (s *Server) syncIfStale() {
	if gen := s.reg.ToolsGeneration(); s.synced.Load() != gen {
		s.sync(gen)
	}
}

// sync makes the server's tools equal to the catalog's, as of the
// registry's tools generation gen (loaded before). The SDK sends
// notifications/tools/list_changed to every session after changes.
func (s *Server) sync(gen uint64) {
	s.mu.Lock() // so that an older list is never applied after a newer one
	defer s.mu.Unlock()
	defer s.synced.Store(gen)
	want := map[string]catalog.Tool{}
	for _, t := range s.cat.Tools() {
		want[t.Name] = t
	}
	var gone []string
	for name := range s.exposed {
		if _, ok := want[name]; !ok {
			gone = append(gone, name)
			delete(s.exposed, name)
		}
	}
	if len(gone) > 0 {
		s.mcp.RemoveTools(gone...)
	}
	for name, t := range want {
		fp := t.Description + "\x00" + string(t.InputSchema)
		if s.exposed[name] == fp {
			continue
		}
		if err := s.add(t); err != nil {
			s.log.Warn("mcp: tool not offered", "tool", name, "device", t.DeviceID, "err", err)
			continue
		}
		s.exposed[name] = fp
	}
}

// add registers one tool, turning the SDK's panic on a schema it rejects
// into an error.
func (s *Server) add(t catalog.Tool) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("rejected by the MCP SDK: %v", r)
		}
	}()
	tool := &mcp.Tool{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema, Title: title(t)}
	if t.Kind == catalog.KindIoTState || t.Name == catalog.ToolSearchDevices || t.Name == catalog.ToolGetDevice {
		tool.Annotations = &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, Title: tool.Title}
	}
	name := t.Name
	s.mcp.AddTool(tool, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res := s.cat.Call(ctx, name, req.Params.Arguments)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: res.Text}}, IsError: res.IsError}, nil
	})
	return nil
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
	return t.Target + " · " + t.DeviceID
}
