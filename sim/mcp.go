package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// maxListPayload is the firmware's tools/list page budget, which includes a
// 30-byte margin (docs/protocol.md §8.4).
const maxListPayload = 8000

// handleMCP is McpServer::ParseMessage, run on the read loop like on the
// firmware's network task; replies are scheduled on the main loop (§8.2).
func (d *Device) handleMCP(l *link, payload json.RawMessage) {
	msg, _ := object(payload)
	// §8.2 checks, in the firmware's order; failures get no reply at all.
	if v, ok := str(item(msg, "jsonrpc")); !ok || v != "2.0" {
		d.dropMCP("jsonrpc is not the string \"2.0\"")
		return
	}
	method, ok := str(item(msg, "method"))
	if !ok {
		d.dropMCP("method is not a string")
		return
	}
	if strings.HasPrefix(method, "notifications") {
		d.mu.Lock()
		d.notes++
		d.mu.Unlock()
		return
	}
	rawParams := item(msg, "params")
	var params map[string]json.RawMessage
	if rawParams != nil {
		if params, ok = object(rawParams); !ok { // null counts as not an object
			d.dropMCP("params is not an object")
			return
		}
	}
	idf, ok := number(item(msg, "id"))
	if !ok {
		d.dropMCP("id is not a number") // string ids get no reply (§12.11)
		return
	}
	id := cInt(idf)

	switch method {
	case "initialize":
		d.initialize(l, id, params)
	case "tools/list":
		d.toolsList(l, id, params)
	case "tools/call":
		d.toolsCall(l, id, params)
	default:
		d.replyError(l, id, "Method not implemented: "+method)
	}
}

func (d *Device) dropMCP(why string) {
	d.mu.Lock()
	d.dropped++
	d.mu.Unlock()
	d.log.Debug("sim: MCP message dropped", "why", why)
}

// initialize records capabilities.vision and answers (§8.3).
func (d *Device) initialize(l *link, id int, params map[string]json.RawMessage) {
	if caps, ok := object(item(params, "capabilities")); ok {
		if vision, ok := object(item(caps, "vision")); ok {
			if u, ok := str(item(vision, "url")); ok {
				tok, _ := str(item(vision, "token"))
				d.mu.Lock()
				d.visionURL, d.visionToken = u, tok
				d.mu.Unlock()
			}
		}
	}
	d.replyResult(l, id, `{"protocolVersion":"2024-11-05","capabilities":{"tools":{}},"serverInfo":{"name":`+
		quote(d.cfg.Board)+`,"version":`+quote(d.cfg.Firmware)+`}}`)
}

// toolsList is McpServer::GetToolsList (§8.4).
func (d *Device) toolsList(l *link, id int, params map[string]json.RawMessage) {
	cursor, _ := str(item(params, "cursor"))
	withUser := kind(item(params, "withUserTools")) == 't' // only a JSON true
	d.mu.Lock()
	tools := append([]*Tool(nil), d.tools...)
	loop := d.faults.PaginationLoop
	d.mu.Unlock()

	page, first, next, failed := listPage(tools, cursor, withUser)
	if failed {
		d.replyError(l, id, "Failed to add tool "+next+" because of payload size limit")
		return
	}
	if loop {
		next = first // FAULT: the same cursor forever
	}
	if next == "" {
		d.replyResult(l, id, page+"]}") // nextCursor omitted on the last page
	} else {
		d.replyResult(l, id, page+`],"nextCursor":`+quote(next)+"}")
	}
}

// listPage walks tools in order from the tool named cursor (inclusive),
// skipping user-only tools unless withUser, and adds tools while
// len(json so far) + len(tool + ",") + 30 <= 8000. It returns the unclosed
// page, the first and the next tool name, and whether nothing fitted.
func listPage(tools []*Tool, cursor string, withUser bool) (page, first, next string, failed bool) {
	var b strings.Builder
	b.WriteString(`{"tools":[`)
	found := cursor == ""
	added := 0
	for _, t := range tools {
		if !found {
			if t.Name != cursor {
				continue
			}
			found = true
		}
		if t.UserOnly && !withUser {
			continue
		}
		js := t.JSON()
		if b.Len()+len(js)+1+30 > maxListPayload {
			next = t.Name
			break
		}
		b.WriteString(js)
		b.WriteByte(',') // counted in the budget, as on the firmware
		if added == 0 {
			first = t.Name
		}
		added++
	}
	// Nothing added: error, even for an unknown cursor (next is then "").
	// An empty tool list gives an empty page.
	return strings.TrimSuffix(b.String(), ","), first, next, added == 0 && len(tools) > 0
}

// toolsCall validates a tools/call (§8.5). Errors are replied at once; the
// tool itself runs later on the main loop.
func (d *Device) toolsCall(l *link, id int, params map[string]json.RawMessage) {
	name, nameOK := str(item(params, "name"))
	d.mu.Lock()
	d.calls = append(d.calls, name)
	d.mu.Unlock()
	if params == nil {
		d.replyError(l, id, "Missing params")
		return
	}
	if !nameOK {
		d.replyError(l, id, "Missing name")
		return
	}
	var args map[string]json.RawMessage
	if raw := item(params, "arguments"); raw != nil {
		var ok bool
		if args, ok = object(raw); !ok {
			d.replyError(l, id, "Invalid arguments")
			return
		}
	}
	d.mu.Lock()
	t := d.findTool(name) // user-only tools are callable by name
	d.mu.Unlock()
	if t == nil {
		d.replyError(l, id, "Unknown tool: "+name)
		return
	}
	vals, msg := bindArgs(t, args)
	if msg != "" {
		d.replyError(l, id, msg)
		return
	}
	d.loop.schedule(func() { d.runTool(l, id, t, vals) })
}

// bindArgs is DoToolCall's argument loop: properties in declaration order,
// a value of the wrong JSON type counts as absent, numbers are truncated,
// ranges are checked as each value is set.
func bindArgs(t *Tool, args map[string]json.RawMessage) (Args, string) {
	vals := make(Args, len(t.Props))
	for _, p := range t.Props {
		v := item(args, p.Name)
		found := false
		switch p.Type {
		case TypeBoolean:
			if k := kind(v); k == 't' || k == 'f' {
				vals[p.Name], found = k == 't', true
			}
		case TypeInteger:
			if f, ok := number(v); ok {
				n := cInt(f)
				if p.HasRange && n < p.Min {
					return nil, "Value is below minimum allowed: " + strconv.Itoa(p.Min)
				}
				if p.HasRange && n > p.Max {
					return nil, "Value exceeds maximum allowed: " + strconv.Itoa(p.Max)
				}
				vals[p.Name], found = n, true
			}
		case TypeString:
			if s, ok := str(v); ok {
				vals[p.Name], found = s, true
			}
		}
		if !found {
			if p.DefaultValue == nil {
				return nil, "Missing valid argument: " + p.Name
			}
			vals[p.Name] = p.DefaultValue
		}
	}
	return vals, ""
}

// callCtx is what a handler's context carries.
type callCtx struct {
	d *Device
	l *link
}

// runTool runs on the main loop; its reply is scheduled again (§8.5).
func (d *Device) runTool(l *link, id int, t *Tool, args Args) {
	ctx := context.WithValue(l.ctx, ctxKey{}, &callCtx{d, l})
	res, err := call(ctx, t, args)
	if err != nil {
		d.replyError(l, id, err.Error())
		return
	}
	d.replyResult(l, id, toolResult(res))
}

func call(ctx context.Context, t *Tool, args Args) (res any, err error) {
	if t.Handler == nil {
		return true, nil
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r) // the firmware catches exceptions the same way
		}
	}()
	return t.Handler(ctx, args)
}

func (d *Device) replyResult(l *link, id int, result string) {
	d.reply(l, id, `"result":`+result)
}

// replyError sends {"error":{"message":…}}, without a code (§8.2) unless
// the ErrorCode fault is set.
func (d *Device) replyError(l *link, id int, msg string) {
	d.mu.Lock()
	code := d.faults.ErrorCode
	d.mu.Unlock()
	e := `{"message":` + quote(msg) + `}`
	if code != 0 {
		e = `{"code":` + strconv.Itoa(code) + `,"message":` + quote(msg) + `}`
	}
	d.reply(l, id, `"error":`+e)
}

// reply is SendMcpMessage: the payload is sent from the main loop.
func (d *Device) reply(l *link, id int, body string) {
	payload := `{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,` + body + `}`
	d.loop.schedule(func() {
		d.mu.Lock()
		f := d.faults
		d.mu.Unlock()
		send := func() {
			if f.UnknownIDReplies {
				_ = d.sendText(l, d.envelope(`{"jsonrpc":"2.0","id":`+strconv.Itoa(1<<30+id)+`,"result":{}}`))
			}
			_ = d.sendText(l, d.envelope(payload))
		}
		if f.ReplyDelay > 0 {
			time.AfterFunc(f.ReplyDelay, send)
			return
		}
		send()
	})
}

// envelope wraps a JSON-RPC payload by concatenation, as protocol.cc does (§5.1).
func (d *Device) envelope(payload string) []byte {
	return []byte(`{"session_id":"` + d.SessionID() + `","type":"mcp","payload":` + payload + `}`)
}
