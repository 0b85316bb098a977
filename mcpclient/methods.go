package mcpclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/xiaozhi-hub/hub"
)

// ProtocolVersion is what the firmware implements and answers.
const ProtocolVersion = "2024-11-05"

// ServerInfo is the device's answer to initialize.
type ServerInfo struct {
	ProtocolVersion string
	Name            string // the board name
	Version         string // the firmware version
}

// Initialize performs the initialize request and, on success, sends
// notifications/initialized.
func (c *Client) Initialize(ctx context.Context) (ServerInfo, error) {
	caps := map[string]any{}
	if c.opts.Vision != nil && c.opts.Vision.URL != "" {
		caps["vision"] = c.opts.Vision // top level: where the firmware reads it (§8.3)
	}
	params := map[string]any{
		"protocolVersion": ProtocolVersion,
		"capabilities":    caps,
		"clientInfo":      map[string]string{"name": "xiaozhi-hub", "version": c.opts.ClientVersion},
	}
	res, err := c.Call(ctx, "initialize", params)
	if err != nil {
		return ServerInfo{}, err
	}
	var r struct {
		ProtocolVersion string `json:"protocolVersion"`
		ServerInfo      struct {
			Name    string `json:"name"`
			Version string `json:"version"`
		} `json:"serverInfo"`
	}
	if err := json.Unmarshal(res, &r); err != nil {
		return ServerInfo{}, hub.Errorf(hub.EDEVICE, "malformed initialize result: %v", err)
	}
	if err := c.Notify(ctx, "notifications/initialized", nil); err != nil {
		return ServerInfo{}, hub.Errorf(hub.EGONE, "send notifications/initialized: %w", err)
	}
	return ServerInfo{ProtocolVersion: r.ProtocolVersion, Name: r.ServerInfo.Name, Version: r.ServerInfo.Version}, nil
}

// ErrIncomplete is wrapped by ListTools when it stopped before the device's
// last page; the tools gathered so far are returned with it.
var ErrIncomplete = errors.New("tool list incomplete")

// ListTools fetches the device's whole tool list, user-only tools included
// (withUserTools), following nextCursor (a tool name) until it is absent or
// empty. A repeated cursor or a list past the page, byte or tool limits
// stops with ErrIncomplete. Tools repeated across pages are kept once.
func (c *Client) ListTools(ctx context.Context) ([]hub.Tool, error) {
	var tools []hub.Tool
	seenTool := map[string]bool{}
	seenCursor := map[string]bool{}
	cursor, total := "", 0
	for page := 1; ; page++ {
		if page > c.opts.MaxPages {
			return tools, fmt.Errorf("%w: more than %d pages", ErrIncomplete, c.opts.MaxPages)
		}
		params := map[string]any{"withUserTools": true}
		if cursor != "" {
			params["cursor"] = cursor
		}
		res, err := c.Call(ctx, "tools/list", params)
		if err != nil {
			if len(tools) > 0 {
				return tools, fmt.Errorf("%w: page %d: %w", ErrIncomplete, page, err)
			}
			return nil, err
		}
		total += len(res)
		if total > c.opts.MaxListBytes {
			return tools, fmt.Errorf("%w: list exceeds %d bytes", ErrIncomplete, c.opts.MaxListBytes)
		}
		var r struct {
			Tools      []json.RawMessage `json:"tools"`
			NextCursor json.RawMessage   `json:"nextCursor"`
		}
		if err := json.Unmarshal(res, &r); err != nil {
			return tools, fmt.Errorf("%w: page %d is malformed: %v", ErrIncomplete, page, err)
		}
		for _, raw := range r.Tools {
			t, err := decodeTool(raw)
			if err != nil {
				c.log.Warn("skipping a malformed tool", "page", page, "err", err)
				continue
			}
			if seenTool[t.Name] {
				continue
			}
			if len(tools) >= c.opts.MaxTools {
				return tools, fmt.Errorf("%w: more than %d tools", ErrIncomplete, c.opts.MaxTools)
			}
			seenTool[t.Name] = true
			tools = append(tools, t)
		}
		next := ""
		if len(r.NextCursor) > 0 && string(r.NextCursor) != "null" {
			if err := json.Unmarshal(r.NextCursor, &next); err != nil {
				return tools, fmt.Errorf("%w: nextCursor on page %d is not a string", ErrIncomplete, page)
			}
		}
		if next == "" {
			return tools, nil
		}
		if seenCursor[next] {
			return tools, fmt.Errorf("%w: the device repeated cursor %q", ErrIncomplete, next)
		}
		seenCursor[next] = true
		cursor = next
	}
}

func decodeTool(raw json.RawMessage) (hub.Tool, error) {
	var w struct {
		Name        *string         `json:"name"`
		Description string          `json:"description"`
		InputSchema json.RawMessage `json:"inputSchema"`
		Annotations json.RawMessage `json:"annotations"`
	}
	if err := json.Unmarshal(raw, &w); err != nil {
		return hub.Tool{}, err
	}
	if w.Name == nil || *w.Name == "" {
		return hub.Tool{}, errors.New("tool without a name")
	}
	t := hub.Tool{Name: *w.Name, Description: w.Description, InputSchema: w.InputSchema}
	if len(t.InputSchema) == 0 || string(t.InputSchema) == "null" {
		t.InputSchema = json.RawMessage(`{"type":"object","properties":{}}`)
	}
	if len(w.Annotations) > 0 && string(w.Annotations) != "null" {
		t.Annotations = w.Annotations
		var a struct {
			Audience []string `json:"audience"`
		}
		if json.Unmarshal(w.Annotations, &a) == nil && len(a.Audience) > 0 && !slices.Contains(a.Audience, "assistant") {
			t.UserOnly = true // e.g. ["user"]: reboot, firmware upgrade (§8.4)
		}
	}
	return t, nil
}

// CallTool runs tools/call. A JSON-RPC error from the device (unknown tool,
// bad argument, the tool failed) is an EDEVICE *hub.Error carrying the
// device's message; isError results are returned as results.
func (c *Client) CallTool(ctx context.Context, name string, args json.RawMessage) (hub.CallResult, error) {
	res, err := c.Call(ctx, "tools/call", struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}{name, args})
	if err != nil {
		return hub.CallResult{}, err
	}
	var r struct {
		Content json.RawMessage `json:"content"`
		IsError bool            `json:"isError"`
	}
	if err := json.Unmarshal(res, &r); err != nil {
		return hub.CallResult{}, hub.Errorf(hub.EDEVICE, "malformed tools/call result from the device: %v", err)
	}
	if len(r.Content) == 0 || r.Content[0] != '[' {
		return hub.CallResult{}, hub.Errorf(hub.EDEVICE, "tools/call result from the device has no content array: %s", hub.Truncate(res, 120))
	}
	return hub.CallResult{Content: r.Content, IsError: r.IsError}, nil
}
