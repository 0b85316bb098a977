package services

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/coder/websocket"
	"golang.org/x/time/rate"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/internal/httperr"
	"github.com/xiaozhi-hub/hub/mcpclient"
	"github.com/xiaozhi-hub/hub/protocol"
)

// ServeHTTP is the endpoint programs connect to (EndpointPath), as to
// xiaozhi.me's MCP endpoint: a WebSocket whose ?token= names the service,
// one JSON-RPC message per text frame, the program being the MCP server
// and the hub its client. A missing token is refused with 401, a wrong or
// revoked one with 403, before the upgrade. The connection lives until the
// program leaves, the service is deleted, a newer connection of the same
// service replaces it, or the hub shuts down.
func (m *Manager) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	token := r.URL.Query().Get("token")
	if token == "" {
		httperr.Write(w, m.log, hub.Errorf(hub.EUNAUTHORIZED, "this is a service's MCP endpoint: connect with the URL given when the service was created (POST /api/services), which ends in ?token=…"))
		return
	}
	e, ok := m.byToken(token)
	if !ok {
		httperr.Write(w, m.log, hub.Errorf(hub.EFORBIDDEN, "the token names no service: it is wrong, or its service was deleted (the admin creates a new one with POST /api/services)"))
		return
	}
	m.mu.Lock()
	closed := m.closed
	if !closed {
		m.wg.Add(1)
	}
	m.mu.Unlock()
	if closed {
		httperr.Write(w, m.log, hub.Errorf(hub.EUNAVAILABLE, "the hub is shutting down"))
		return
	}
	defer m.wg.Done()
	// Programs are not browsers; the token is the credential, whatever the Origin.
	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
	if err != nil {
		return // Accept wrote the answer
	}
	c.SetReadLimit(m.opts.MaxMessageBytes)
	m.serveConn(e, c)
}

// conn is one program's connection to its service's endpoint.
type conn struct {
	m      *Manager
	e      *entry
	ws     *websocket.Conn
	mc     *mcpclient.Client
	log    *slog.Logger
	relist chan struct{} // has a value when the tool list should be fetched again
}

func (m *Manager) serveConn(e *entry, ws *websocket.Conn) {
	ctx, cancel := context.WithCancel(m.ctx)
	defer cancel()
	cn := &conn{m: m, e: e, ws: ws, log: m.log.With("service", e.svc.Name), relist: make(chan struct{}, 1)}
	cn.mc = mcpclient.New(cn.send, mcpclient.Options{
		Logger: cn.log, ClientVersion: m.opts.Version, MaxInFlight: m.opts.MaxInFlight,
		MaxPages: maxListPages, MaxListBytes: maxListBytes, MaxTools: maxTools,
		OnNotification: func(method string, _ json.RawMessage) {
			if method == "notifications/tools/list_changed" {
				select {
				case cn.relist <- struct{}{}:
				default:
				}
			}
		},
	})
	cn.log.Info("service connected")
	done := make(chan struct{})
	go func() { // discovery, re-listing and pings; ends with ctx
		defer close(done)
		cn.manage(ctx)
	}()
	why := cn.readLoop(ctx)
	cn.mc.Close(errors.New("the service disconnected: " + why))
	cancel()
	<-done
	m.detach(e, cn, why)
	_ = ws.Close(websocket.StatusNormalClosure, "")
	cn.log.Info("service disconnected", "why", why)
}

// CallTool runs a tool on the program (link).
func (cn *conn) CallTool(ctx context.Context, name string, args []byte) (hub.CallResult, error) {
	return cn.mc.CallTool(ctx, name, args)
}

func (cn *conn) send(ctx context.Context, payload []byte) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return cn.ws.Write(ctx, websocket.MessageText, payload)
}

// closeWith ends the connection with a reason the program sees.
func (cn *conn) closeWith(reason string) {
	_ = cn.ws.Close(websocket.StatusPolicyViolation, hub.Truncate([]byte(reason), 120))
}

// readLoop hands each message to the MCP client until the connection
// ends, and returns why it ended. Text is repaired to valid UTF-8 first;
// messages the hub did not ask for are rate-limited
// (Options.NoticesPerSecond): past the limit the connection is closed.
func (cn *conn) readLoop(ctx context.Context) string {
	lim := rate.NewLimiter(rate.Limit(cn.m.opts.NoticesPerSecond), max(1, int(4*cn.m.opts.NoticesPerSecond)))
	for {
		_, data, err := cn.ws.Read(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return "closed by the hub"
			}
			return closeReason(err)
		}
		data = protocol.ValidText(bytes.TrimSpace(data)) // mcp_pipe.py sends each line with its newline
		msg, err := protocol.DecodeRPC(data)
		if err != nil {
			if id, raw, ok := protocol.RecoverReplyID(data); ok && cn.mc.FailReply(id, raw) {
				continue
			}
		} else if cn.mc.Awaits(&msg) {
			cn.mc.Deliver(msg)
			continue
		}
		if !lim.Allow() {
			cn.closeWith("too many messages the hub did not ask for")
			return fmt.Sprintf("more than %g unasked messages a second", cn.m.opts.NoticesPerSecond)
		}
		switch {
		case err != nil:
			cn.log.Debug("undecodable message from a service", "err", err)
		case msg.Method == "ping" && len(msg.ID) > 0:
			_ = cn.send(ctx, pong(msg.ID))
		default:
			cn.mc.Deliver(msg) // notifications; requests get "method not found"
		}
	}
}

// pong answers a ping request.
func pong(id json.RawMessage) []byte {
	b, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  struct{}        `json:"result"`
	}{"2.0", id, struct{}{}})
	return b
}

func closeReason(err error) string {
	if s := websocket.CloseStatus(err); s != -1 {
		return fmt.Sprintf("the program closed the connection (%d)", s)
	}
	return hub.Truncate([]byte(err.Error()), 200)
}

// manage initializes the session, lists the tools, attaches the service,
// then re-lists on notifications/tools/list_changed and pings the
// program, until ctx ends. A failure closes the connection.
func (cn *conn) manage(ctx context.Context) {
	ictx, cancel := context.WithTimeout(ctx, 30*time.Second)
	info, err := cn.mc.Initialize(ictx)
	cancel()
	if err != nil {
		cn.fail(ctx, "initialize failed: "+hub.ErrorMessage(err))
		return
	}
	if !cn.list(ctx) {
		return
	}
	server := info.Name
	if info.Version != "" {
		server += " " + info.Version
	}
	if !cn.m.attach(cn.e, cn, server, cn.closeWith) {
		cn.closeWith("the service was deleted")
		return
	}
	ping := time.NewTicker(cn.m.opts.PingInterval)
	defer ping.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-cn.relist:
			if !cn.list(ctx) {
				return
			}
		case <-ping.C:
			pctx, cancel := context.WithTimeout(ctx, cn.m.opts.PingInterval)
			err := cn.ws.Ping(pctx)
			cancel()
			if err != nil && ctx.Err() == nil {
				cn.fail(ctx, "no answer to a ping")
				return
			}
		}
	}
}

// list fetches the tool list and stores it; a list cut short by the
// bounds keeps what came. It reports false when the connection failed.
func (cn *conn) list(ctx context.Context) bool {
	lctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	tools, err := cn.mc.ListTools(lctx)
	cancel()
	if err != nil && !errors.Is(err, mcpclient.ErrIncomplete) {
		cn.fail(ctx, "tools/list failed: "+hub.ErrorMessage(err))
		return false
	}
	if err != nil {
		cn.log.Warn("a service's tool list was cut short", "err", err)
	}
	cn.m.setTools(ctx, cn.e, tools)
	return true
}

func (cn *conn) fail(ctx context.Context, why string) {
	if ctx.Err() != nil {
		return
	}
	cn.log.Warn("closing a service's connection", "why", why)
	cn.closeWith(why)
}
