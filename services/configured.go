package services

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/xiaozhi-hub/hub"
)

// Backoff between attempts to reach a configured server: from the first
// to the longest, doubling; a connection that lived a minute starts over.
const (
	firstBackoff = time.Second
	maxBackoff   = 5 * time.Minute
)

// runServer keeps one configured server connected until the Manager
// closes: connect, list, serve, and after a failure (or the stdio
// program's death) wait and start again.
func (m *Manager) runServer(c ServerConfig) {
	defer m.wg.Done()
	m.mu.Lock()
	e := m.entries[c.Name]
	m.mu.Unlock()
	log := m.log.With("service", c.Name)
	backoff := firstBackoff
	timer := time.NewTimer(0)
	defer timer.Stop()
	<-timer.C
	for {
		start := time.Now()
		err := m.serveServer(e, c)
		if m.ctx.Err() != nil {
			return
		}
		if time.Since(start) > time.Minute {
			backoff = firstBackoff
		}
		why := hub.Truncate([]byte(err.Error()), 300)
		m.setError(e, why)
		log.Warn("configured MCP server unavailable; retrying", "err", why, "in", backoff)
		timer.Reset(backoff)
		select {
		case <-m.ctx.Done():
			return
		case <-timer.C:
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// serveServer connects to c once and serves it until the connection
// ends (its error) or the Manager closes (nil).
func (m *Manager) serveServer(e *entry, c ServerConfig) error {
	relist := make(chan struct{}, 1)
	client := mcp.NewClient(&mcp.Implementation{Name: "xiaozhi-hub", Version: m.opts.Version}, &mcp.ClientOptions{
		KeepAlive: m.opts.PingInterval,
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case relist <- struct{}{}:
			default:
			}
		},
	})
	cctx, cancel := context.WithTimeout(m.ctx, 30*time.Second)
	cs, err := client.Connect(cctx, m.transport(c), nil)
	cancel()
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	ended := make(chan error, 1)
	go func() { ended <- cs.Wait() }() // ends when cs closes, below at the latest
	defer func() {
		_ = cs.Close()
		<-ended
	}()
	if err := m.listServer(e, cs); err != nil {
		return err
	}
	server := ""
	if r := cs.InitializeResult(); r != nil && r.ServerInfo != nil {
		server = strings.TrimSpace(r.ServerInfo.Name + " " + r.ServerInfo.Version)
	}
	l := sdkLink{cs}
	if !m.attach(e, l, server, func(string) { _ = cs.Close() }) {
		return nil
	}
	m.log.Info("configured MCP server connected", "service", c.Name, "server", server)
	for {
		select {
		case <-m.ctx.Done():
			m.detach(e, l, "")
			return nil
		case err := <-ended:
			ended <- err // for the deferred wait
			why := "the connection ended"
			if err != nil {
				why += ": " + err.Error()
			}
			m.detach(e, l, why)
			return errors.New(why)
		case <-relist:
			if err := m.listServer(e, cs); err != nil {
				m.detach(e, l, err.Error())
				return err
			}
		}
	}
}

// transport is c's transport: Streamable HTTP with its headers, or its
// command over stdio.
func (m *Manager) transport(c ServerConfig) mcp.Transport {
	if c.URL != "" {
		return &mcp.StreamableClientTransport{Endpoint: c.URL,
			HTTPClient: &http.Client{Transport: headers{c.Headers, http.DefaultTransport}}}
	}
	cmd := exec.Command(c.Command, c.Args...)
	cmd.Env = childEnv(os.Environ())
	cmd.Stderr = newStderrLog(m.log.With("service", c.Name))
	return &mcp.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}
}

// childEnv is the environment of a stdio server: the hub's, without its
// own settings (XZ_*) and without anything named like a secret (keys,
// tokens, passwords), so that the hub's credentials stay with the hub.
func childEnv(env []string) []string {
	out := env[:0:0]
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		up := strings.ToUpper(name)
		if strings.HasPrefix(up, "XZ_") || strings.Contains(up, "KEY") || strings.Contains(up, "TOKEN") ||
			strings.Contains(up, "SECRET") || strings.Contains(up, "PASSWORD") {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// headers adds a configured server's headers to each request.
type headers struct {
	h    map[string]string
	next http.RoundTripper
}

func (h headers) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(h.h) > 0 {
		r = r.Clone(r.Context())
		for k, v := range h.h {
			r.Header.Set(k, v)
		}
	}
	return h.next.RoundTrip(r)
}

// listServer fetches a configured server's whole tool list (bounded as an
// endpoint's: pages, bytes, tools) and stores it.
func (m *Manager) listServer(e *entry, cs *mcp.ClientSession) error {
	var tools []hub.Tool
	seen := map[string]bool{}
	cursor, size := "", 0
	for page := 0; page < maxListPages && len(tools) < maxTools; page++ {
		ctx, cancel := context.WithTimeout(m.ctx, 30*time.Second)
		res, err := cs.ListTools(ctx, &mcp.ListToolsParams{Cursor: cursor})
		cancel()
		if err != nil {
			return fmt.Errorf("tools/list: %w", err)
		}
		for _, t := range res.Tools {
			schema, _ := json.Marshal(t.InputSchema)
			var ann json.RawMessage
			if t.Annotations != nil {
				ann, _ = json.Marshal(t.Annotations)
			}
			if size += len(t.Name) + len(t.Description) + len(schema) + len(ann); size > maxListBytes {
				m.log.Warn("a configured server's tool list was cut short", "service", e.svc.Name, "bytes", maxListBytes)
				page = maxListPages
				break
			}
			tools = append(tools, hub.Tool{Name: t.Name, Description: t.Description, InputSchema: schema, Annotations: ann})
		}
		if res.NextCursor == "" || seen[res.NextCursor] {
			break
		}
		seen[res.NextCursor] = true
		cursor = res.NextCursor
	}
	m.setTools(m.ctx, e, tools)
	return nil
}

// sdkLink is a configured server's live session.
type sdkLink struct{ cs *mcp.ClientSession }

func (l sdkLink) CallTool(ctx context.Context, name string, args []byte) (hub.CallResult, error) {
	res, err := l.cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: json.RawMessage(args)})
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return hub.CallResult{}, &hub.Error{Code: hub.ETIMEOUT, Err: ctx.Err(), Message: fmt.Sprintf("the service did not answer %s in time", name)}
		}
		if we, ok := errors.AsType[*jsonrpc.Error](err); ok {
			return hub.CallResult{}, &hub.Error{Code: hub.EDEVICE, Err: err, Message: "service error: " + we.Message}
		}
		return hub.CallResult{}, &hub.Error{Code: hub.EGONE, Err: err, Message: "the service's connection failed: " + hub.Truncate([]byte(err.Error()), 300)}
	}
	content, err := json.Marshal(res.Content)
	if err != nil {
		return hub.CallResult{}, hub.Errorf(hub.EDEVICE, "the service's result cannot be encoded: %v", err)
	}
	if string(content) == "null" {
		content = []byte("[]")
	}
	return hub.CallResult{Content: content, IsError: res.IsError}, nil
}
