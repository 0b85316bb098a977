package mcpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/internal/jsonscan"
	"github.com/xiaozhi-hub/hub/protocol"
)

// protocolVersion is what the firmware implements and answers.
const protocolVersion = "2024-11-05"

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
		caps["vision"] = c.opts.Vision // top level: where the firmware reads it (docs/protocol.md §8.3)
	}
	params := map[string]any{
		"protocolVersion": protocolVersion,
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
		rpc, err := c.call(ctx, "tools/list", params)
		res := rpc.Result
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
		if !decodePage(rpc, &r.Tools, &r.NextCursor) {
			if err := json.Unmarshal(res, &r); err != nil {
				return tools, fmt.Errorf("%w: page %d is malformed: %v", ErrIncomplete, page, err)
			}
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
	if t, ok := decodeToolFast(raw, true); ok {
		return t, nil
	}
	return decodeToolJSON(raw)
}

func decodeToolJSON(raw json.RawMessage) (hub.Tool, error) {
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
	annotate(&t, w.Annotations)
	return t, nil
}

// annotate sets the tool's annotations and whether they make it user-only.
func annotate(t *hub.Tool, annotations json.RawMessage) {
	if len(annotations) > 0 && string(annotations) != "null" {
		t.Annotations = annotations
		var a struct {
			Audience []string `json:"audience"`
		}
		if json.Unmarshal(annotations, &a) == nil && len(a.Audience) > 0 && !slices.Contains(a.Audience, "assistant") {
			t.UserOnly = true // e.g. ["user"]: reboot, firmware upgrade (§8.4)
		}
	}
}

var (
	pageKeys = []string{"tools", "nextCursor"}
	toolKeys = []string{"name", "description", "inputSchema", "annotations"}
)

// decodePage is ListTools' decoding of a page, without reflection, for a
// page whose "tools" is an array (or null or absent); elements and cursor
// share memory with res. It reports false for anything else, which
// encoding/json then decodes or rejects.
func decodePage(r protocol.RPC, tools *[]json.RawMessage, next *json.RawMessage) bool {
	var vals [2][]byte
	if !r.ResultMembers(pageKeys, vals[:]) {
		return false
	}
	switch list := vals[0]; {
	case list == nil || string(list) == "null":
	case list[0] == '[':
		jsonscan.ValidElements(list, func(e []byte) bool {
			*tools = append(*tools, e)
			return true
		})
	default:
		return false
	}
	*next = vals[1]
	return true
}

// decodeToolFast is decodeTool without reflection for a well-formed tool:
// an object with a non-empty string name and a string (or null) description.
// Everything else takes encoding/json's path, for the same result or error.
// valid says raw is known to be valid JSON (every element of a decoded
// page is), so that it is not checked again.
func decodeToolFast(raw []byte, valid bool) (hub.Tool, bool) {
	var v [4][]byte
	members := jsonscan.ObjectMembers
	if valid {
		members = jsonscan.ValidMembers
	}
	if !members(raw, toolKeys, v[:]) {
		return hub.Tool{}, false
	}
	name, ok := jsonscan.String(v[0])
	if !ok || name == "" {
		return hub.Tool{}, false
	}
	t := hub.Tool{Name: name}
	if d := v[1]; d != nil && string(d) != "null" {
		if t.Description, ok = jsonscan.String(d); !ok {
			return hub.Tool{}, false
		}
	}
	if len(v[2]) == 0 || string(v[2]) == "null" {
		t.InputSchema = json.RawMessage(`{"type":"object","properties":{}}`)
	} else {
		t.InputSchema = bytes.Clone(v[2]) // not the whole page: it is cached for long
	}
	annotate(&t, bytes.Clone(v[3]))
	return t, true
}

// CallTool runs tools/call. A JSON-RPC error from the device (unknown tool,
// bad argument, the tool failed) is an EDEVICE *hub.Error carrying the
// device's message; isError results are returned as results.
func (c *Client) CallTool(ctx context.Context, name string, args json.RawMessage) (hub.CallResult, error) {
	reply, err := c.call(ctx, "tools/call", struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}{name, args})
	if err != nil {
		return hub.CallResult{}, err
	}
	res := reply.Result
	if content, isError, ok := decodeCallResult(reply); ok {
		return hub.CallResult{Content: content, IsError: isError}, nil
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

var callResultKeys = []string{"content", "isError"}

// decodeCallResult is the common case of CallTool's decoding, without
// reflection: a result object with a content array and isError true, false
// or absent. Anything else (and every error) takes encoding/json's path.
// Content shares memory with res.
func decodeCallResult(r protocol.RPC) (content json.RawMessage, isError, ok bool) {
	var vals [2][]byte
	if !r.ResultMembers(callResultKeys, vals[:]) {
		return nil, false, false
	}
	switch string(vals[1]) {
	case "", "null", "false":
	case "true":
		isError = true
	default:
		return nil, false, false
	}
	if len(vals[0]) == 0 || vals[0][0] != '[' {
		return nil, false, false
	}
	return vals[0], isError, true
}
