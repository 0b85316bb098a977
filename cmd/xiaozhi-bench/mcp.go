package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpCaller calls device tools through the hub's MCP endpoint (/mcp, MCP
// Streamable HTTP) with the hub's call_device_tool, using the official
// go-sdk client. Calls are spread over several sessions.
type mcpCaller struct {
	sessions []*mcp.ClientSession
	ids      []string
}

const mcpCallDeviceTool = "call_device_tool"

// bearer adds the admin token to every request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// newMCPCaller connects to h's /mcp. It returns (nil, why, nil) when the hub
// has no MCP endpoint or no call_device_tool.
func newMCPCaller(ctx context.Context, h *hubProc, ids []string, conc int) (*mcpCaller, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.base+"/mcp", strings.NewReader("{}"))
	if err != nil {
		return nil, "", err
	}
	req.Header.Set("Authorization", "Bearer "+h.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := h.client.Do(req)
	if err != nil {
		return nil, "", err
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return nil, "not measured: this hub serves no /mcp endpoint yet", nil
	}
	hc := &http.Client{Transport: bearer{h.token, &http.Transport{MaxIdleConnsPerHost: 2 * conc, MaxIdleConns: 2 * conc, MaxConnsPerHost: 2 * conc}}}
	client := mcp.NewClient(&mcp.Implementation{Name: "xiaozhi-bench", Version: "dev"}, nil)
	n := max(1, min(conc/4, 64)) // sessions; each carries several calls at once
	mc := &mcpCaller{ids: ids}
	for range n {
		cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{
			Endpoint: h.base + "/mcp", HTTPClient: hc, DisableStandaloneSSE: true, MaxRetries: -1,
		}, nil)
		if err != nil {
			mc.close()
			return nil, "", fmt.Errorf("connect to /mcp: %w", err)
		}
		mc.sessions = append(mc.sessions, cs)
	}
	lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	tools, err := mc.sessions[0].ListTools(lctx, nil)
	if err != nil {
		mc.close()
		return nil, "", fmt.Errorf("list /mcp tools: %w", err)
	}
	if !slices.ContainsFunc(tools.Tools, func(t *mcp.Tool) bool { return t.Name == mcpCallDeviceTool }) {
		mc.close()
		return nil, fmt.Sprintf("not measured: /mcp offers no %s with %d devices", mcpCallDeviceTool, len(ids)), nil
	}
	if err := mc.call(ctx, 0); err != nil {
		mc.close()
		return nil, "", fmt.Errorf("first MCP call: %w", err)
	}
	return mc, "", nil
}

func (mc *mcpCaller) call(ctx context.Context, i int) error {
	res, err := mc.sessions[i%len(mc.sessions)].CallTool(ctx, &mcp.CallToolParams{
		Name: mcpCallDeviceTool,
		Arguments: map[string]any{
			"device_id": mc.ids[i%len(mc.ids)], "tool": callTool, "arguments": map[string]any{"volume": 30},
		},
	})
	if err != nil {
		return err
	}
	if res.IsError {
		msg := ""
		for _, c := range res.Content {
			if t, ok := c.(*mcp.TextContent); ok {
				msg += t.Text
			}
		}
		return errors.New("call_device_tool failed: " + msg)
	}
	return nil
}

func (mc *mcpCaller) close() {
	for _, cs := range mc.sessions {
		_ = cs.Close()
	}
}
