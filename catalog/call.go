package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/registry"
)

// Result is the outcome of a tool call as an agent sees it. Failures —
// invalid arguments, unknown tools, offline devices, device errors — are
// results with IsError set and a message the model can act on, never Go
// errors: the model should see them and correct itself.
type Result struct {
	Text    string `json:"text"`
	IsError bool   `json:"isError"`
	// Code is the hub error code of a failure (hub.EINVALID, …), or
	// "tool_error" when the device's tool itself reported an error.
	Code string `json:"code,omitempty"`
	// Content is the device's MCP content array, when a device tool ran.
	Content json.RawMessage `json:"content,omitempty"`
	// DeviceID and Target say which device tool ran, if any.
	DeviceID  string `json:"deviceId,omitempty"`
	Target    string `json:"target,omitempty"`
	Truncated bool   `json:"truncated,omitempty"`
}

func errResult(err error) Result {
	code, msg := hub.ErrorCode(err), hub.ErrorMessage(err)
	switch {
	case errors.Is(err, registry.ErrUnknownDevice):
		msg += " (search_devices finds device ids)"
	case errors.Is(err, registry.ErrUnknownTool):
		msg += " (list the tools again: the device may have changed them)"
	}
	return Result{Text: code + ": " + msg, IsError: true, Code: code}
}

// Call runs the agent tool called name with JSON object arguments.
func (c *Catalog) Call(ctx context.Context, name string, args json.RawMessage) Result {
	t, ok := c.Lookup(ctx, name)
	if !ok && fixedOnly(name) {
		return c.bound(errResult(hub.Errorf(hub.ENOTFOUND, "%s is offered only when the hub has more devices than it lists directly; "+
			"call the device's own tool instead (list the tools again to see them)", name)))
	}
	if !ok {
		return c.bound(errResult(hub.Errorf(hub.ENOTFOUND, "no tool %q: the device may have gone or changed its tools; list the tools again or use search_devices", name)))
	}
	if t.Kind == KindHub {
		return c.bound(c.callHub(ctx, t.Name, args))
	}
	return c.bound(c.run(ctx, t, args))
}

// CallDeviceTool runs a device's tool named by its agent name or the
// device's own name (MCP tool name, "Thing.Method", "Thing").
func (c *Catalog) CallDeviceTool(ctx context.Context, deviceID, tool string, args json.RawMessage) Result {
	var t Tool
	var err error
	if name, ok := strings.CutPrefix(deviceID, ServicePrefix); ok && c.opts.Services != nil {
		t, err = c.resolveService(ctx, name, tool)
	} else {
		t, _, err = c.resolve(ctx, deviceID, tool)
	}
	if err != nil {
		return c.bound(errResult(err))
	}
	return c.bound(c.run(ctx, t, args))
}

func (c *Catalog) run(ctx context.Context, t Tool, args json.RawMessage) Result {
	var r Result
	switch t.Kind {
	case KindDevice:
		r = c.callMCP(ctx, t, args)
	case KindIoT:
		thing, method, _ := strings.Cut(t.Target, ".")
		r = c.sendIoT(ctx, t.DeviceID, []hub.IoTCommand{{Name: thing, Method: method, Parameters: args}})
	case KindIoTState:
		r = c.readState(t.DeviceID, t.Target)
	case KindService:
		r = c.callService(ctx, t, args)
	}
	r.DeviceID, r.Target = t.DeviceID, t.Target
	return r
}

func (c *Catalog) callMCP(ctx context.Context, t Tool, args json.RawMessage) Result {
	return callResult(c.reg.CallTool(ctx, registry.CallRequest{DeviceID: t.DeviceID, Tool: t.Target, Arguments: args,
		Timeout: c.opts.CallTimeout, Caller: c.opts.Caller}))
}

// callResult is an MCP tool's answer (a device's or a service's) as an
// agent sees it.
func callResult(res hub.CallResult, err error) Result {
	if err != nil {
		return errResult(err)
	}
	r := Result{Text: contentText(res.Content), Content: res.Content, IsError: res.IsError}
	if res.IsError {
		r.Code = hub.OutcomeToolError
	}
	return r
}

// contentText flattens MCP content for a model: text items as they are,
// anything else (images, resources) as JSON.
func contentText(content json.RawMessage) string {
	var items []json.RawMessage
	if json.Unmarshal(content, &items) != nil {
		return string(content)
	}
	var parts []string
	for _, it := range items {
		var x struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if json.Unmarshal(it, &x) == nil && x.Type == "text" {
			parts = append(parts, x.Text)
		} else {
			parts = append(parts, string(it))
		}
	}
	return strings.Join(parts, "\n")
}

// sendIoT sends commands and, since legacy devices never acknowledge them,
// waits briefly for the state report that follows to say what changed.
func (c *Catalog) sendIoT(ctx context.Context, deviceID string, cmds []hub.IoTCommand) Result {
	var events <-chan hub.Event
	if c.opts.IoTWait > 0 {
		ch, stop := c.reg.Subscribe()
		defer stop()
		events = ch
	}
	if err := c.reg.SendIoTCommands(ctx, deviceID, cmds, c.opts.Caller); err != nil {
		return errResult(err)
	}
	names := make([]string, len(cmds))
	want := map[string]bool{}
	for i, cmd := range cmds {
		names[i] = cmd.Name + "." + cmd.Method
		want[cmd.Name] = true
	}
	out := map[string]any{"sent": names}
	if events != nil {
		reported := waitStates(ctx, events, deviceID, want, c.opts.IoTWait)
		if len(reported) > 0 {
			out["reported_state"] = reported
		} else {
			out["note"] = fmt.Sprintf("the device sent no state report within %v; legacy devices do not acknowledge commands, so read the state later to confirm", c.opts.IoTWait)
		}
	}
	b, _ := json.Marshal(out)
	return Result{Text: string(b)}
}

// waitStates collects iot_changed state reports of the wanted things until
// all have reported or d has passed.
func waitStates(ctx context.Context, events <-chan hub.Event, deviceID string, want map[string]bool, d time.Duration) map[string]any {
	got := map[string]any{}
	timer := time.NewTimer(d)
	defer timer.Stop()
	for len(got) < len(want) {
		select {
		case <-ctx.Done():
			return got
		case <-timer.C:
			return got
		case ev, ok := <-events:
			if !ok {
				return got
			}
			if ev.Type != hub.EventIoTChanged || ev.DeviceID != deviceID {
				continue
			}
			m, _ := ev.Data.(map[string]any)
			thing, _ := m["thing"].(string)
			if st, ok := m["state"]; ok && want[thing] {
				got[thing] = st
			}
		}
	}
	return got
}

func (c *Catalog) readState(deviceID, thing string) Result {
	things, err := c.reg.Things(deviceID)
	if err != nil {
		return errResult(err)
	}
	dev, _ := c.reg.Device(deviceID)
	for _, t := range things {
		if t.Name != thing {
			continue
		}
		out := map[string]any{"thing": t.Name, "state": t.State, "online": dev.Online}
		if !t.StateUpdated.IsZero() {
			out["reported_at"] = t.StateUpdated.UTC().Format(time.RFC3339)
		}
		b, _ := json.Marshal(out)
		return Result{Text: string(b)}
	}
	return errResult(hub.Errorf(hub.ENOTFOUND, "device %q has no IoT thing %q", deviceID, thing))
}

// bound caps a result's text at MaxResultBytes, on a character boundary.
func (c *Catalog) bound(r Result) Result {
	limit := c.opts.MaxResultBytes
	if len(r.Text) <= limit {
		return r
	}
	cut := limit
	for cut > 0 && !utf8.RuneStart(r.Text[cut]) {
		cut--
	}
	r.Text = fmt.Sprintf("%s… [truncated: %d of %d bytes shown]", r.Text[:cut], cut, len(r.Text))
	r.Truncated = true
	return r
}
