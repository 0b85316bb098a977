package mcpserver

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/catalog"
)

// session is one MCP session with the SDK server of its own that offers
// its principal's tools.
type session struct {
	srv   *mcp.Server
	owner string                        // owner(p) of the principal that opened it
	p     atomic.Pointer[hub.Principal] // as of its latest request
	// opened is set once the initialize request that made the session has
	// been answered (guarded by Server.openMu): a session without SDK
	// sessions after that has ended.
	opened bool

	mu      sync.Mutex        // serialises syncs, so an older list never replaces a newer one
	exposed map[string]string // tool name → fingerprint of what was added
	synced  uint64            // toolsGeneration of exposed
	view    string            // catalog.ViewKey of the principal exposed was computed for
	built   bool
}

// owner names who may use a session: its requests must all come from the
// same principal (the same person through the same kind of credential, or
// the admin).
func owner(p *hub.Principal) string {
	if p == nil {
		return ""
	}
	if p.Admin {
		return "admin\x00" + p.Client
	}
	return p.Actor()
}

type openingKey struct{}

// opening is the context value of an initialize request: the session the
// SDK makes for it, made at its first call of serverFor.
type opening struct {
	p  *hub.Principal
	ss *session
}

// serverFor gives the SDK the server of a request: a session's own, or,
// for the initialize request ServeHTTP admitted, a new one for its
// principal. The SDK asks more than once per request.
func (s *Server) serverFor(r *http.Request) *mcp.Server {
	if id := r.Header.Get("Mcp-Session-Id"); id != "" {
		if ss := s.lookup(id); ss != nil {
			return ss.srv
		}
		return nil // the SDK answers 404
	}
	o, _ := r.Context().Value(openingKey{}).(*opening)
	if o == nil {
		return nil // not an initialize request: the SDK refuses it
	}
	if o.ss == nil {
		o.ss = s.newSession(o.p)
	}
	return o.ss.srv
}

// newSession makes the server of a new session of p, with p's tools.
func (s *Server) newSession(p *hub.Principal) *session {
	ss := &session{owner: owner(p), exposed: map[string]string{}}
	ss.p.Store(p)
	ss.srv = mcp.NewServer(&mcp.Implementation{Name: "xiaozhi-hub", Title: "xiaozhi-hub devices", Version: s.opts.Version},
		&mcp.ServerOptions{
			Instructions: instructions,
			Logger:       s.opts.Logger,
			Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}},
			GetSessionID: func() string {
				id := rand.Text()
				s.mu.Lock()
				s.sessions[id] = ss
				s.mu.Unlock()
				return id
			},
		})
	s.sync(ss)
	return ss
}

// lookup returns the open session id names, or nil.
func (s *Server) lookup(id string) *session {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sessions[id]
}

// live counts the SDK sessions of ss (0 or 1).
func (ss *session) live() int {
	n := 0
	for range ss.srv.Sessions() {
		n++
	}
	return n
}

// open returns the sessions known now.
func (s *Server) open() []*session {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*session, 0, len(s.sessions))
	for _, ss := range s.sessions {
		out = append(out, ss)
	}
	return out
}

// sweep forgets the sessions that have ended (closed, timed out, or never
// connected); the caller holds openMu.
func (s *Server) sweep() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, ss := range s.sessions {
		if ss.opened && ss.live() == 0 {
			delete(s.sessions, id)
		}
	}
}

// relook looks the session's person up again (their homes now) and syncs
// its tools. The admin, a device and the hub itself are not people.
func (s *Server) relook(ss *session) {
	p := ss.p.Load()
	if p == nil || p.Admin || p.User == "" || p.Device != "" {
		return
	}
	q := &hub.Principal{User: p.User} // gone: sees nothing, and the next request is refused
	if now, ok := s.opts.People.Principal(p.User); ok {
		q.Homes = now.Homes
	}
	q.Token, q.Client, q.Agent, q.Credential = p.Token, p.Client, p.Agent, p.Credential
	ss.p.CompareAndSwap(p, q) // unless a request brought a newer one meanwhile
	s.sync(ss)
}

// sync makes the session's tools those its principal is offered now
// (when the registry's tools or the principal's homes changed since the
// last sync). The SDK sends notifications/tools/list_changed after changes.
func (s *Server) sync(ss *session) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	gen := s.toolsGeneration() // before reading: a later change syncs again
	p := ss.p.Load()
	view := catalog.ViewKey(p)
	if ss.built && ss.synced == gen && ss.view == view {
		return
	}
	s.syncs.Add(1)
	want := map[string]catalog.Tool{}
	for _, t := range s.cat.Tools(hub.WithPrincipal(context.Background(), p)) {
		want[t.Name] = t
	}
	var gone []string
	for name := range ss.exposed {
		if _, ok := want[name]; !ok {
			gone = append(gone, name)
			delete(ss.exposed, name)
		}
	}
	if len(gone) > 0 {
		ss.srv.RemoveTools(gone...)
	}
	for name, t := range want {
		fp := t.Description + "\x00" + string(t.InputSchema)
		if ss.exposed[name] == fp {
			continue
		}
		if err := s.add(ss, t); err != nil {
			s.log.Warn("mcp: tool not offered", "tool", name, "device", t.DeviceID, "err", err)
			continue
		}
		ss.exposed[name] = fp
	}
	ss.synced, ss.view, ss.built = gen, view, true
}

// toolsGeneration changes whenever the devices' tools or the services'
// do: the sum of two counters that only grow.
func (s *Server) toolsGeneration() uint64 {
	gen := s.reg.ToolsGeneration()
	if s.opts.Services != nil {
		gen += s.opts.Services.Generation()
	}
	return gen
}

// add registers one tool in a session, turning the SDK's panic on a schema
// it rejects into an error. Its calls act as the session's principal as of
// its latest request.
func (s *Server) add(ss *session, t catalog.Tool) (err error) {
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
	ss.srv.AddTool(tool, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res := s.cat.Call(hub.WithPrincipal(ctx, ss.p.Load()), name, req.Params.Arguments)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: res.Text}}, IsError: res.IsError}, nil
	})
	return nil
}
