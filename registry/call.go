package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/iot"
)

// ErrUnknownDevice and ErrUnknownTool are wrapped by the ENOTFOUND errors
// for a device id, or a tool name, the registry does not know. Their
// messages say what is unknown; each boundary adds, in its own terms, where
// the known ones are listed (the API its routes, the catalog its tools).
var (
	ErrUnknownDevice = errors.New("unknown device")
	ErrUnknownTool   = errors.New("unknown tool")
)

// ErrTimeoutRange is wrapped by the EINVALID error for a call timeout that
// is negative or above Options.MaxCallTimeout, so that a boundary can say
// it in its own units (the API's timeoutMs).
var ErrTimeoutRange = errors.New("call timeout out of range")

// CallRequest asks a device to run one of its MCP tools.
type CallRequest struct {
	DeviceID  string
	Tool      string
	Arguments json.RawMessage // a JSON object; empty or null means {} (see Arguments)
	// Timeout for the device's answer; 0 means the registry's default. It
	// may not be negative nor exceed MaxCallTimeout (ErrTimeoutRange).
	Timeout time.Duration
	// Caller names who asked (for the call history), e.g. "api", "agent".
	Caller string
}

// CallTool runs a tool on a device. It fails without contacting the device
// when the device or tool is unknown (ENOTFOUND), the arguments do not match
// the tool's inputSchema (EINVALID) or the device is offline (EOFFLINE).
// Otherwise the device's answer is returned, or ETIMEOUT, EDEVICE (the
// device answered with an error) or EGONE (it disconnected mid-call).
// Every call is recorded.
//
// When ctx carries a principal (hub.WithPrincipal), a device it does not
// see is ENOTFOUND, exactly as an unknown one, and not recorded; a tool
// its role may not run is EFORBIDDEN (Principal.MayCall). The record says
// who asked (By, User).
func (r *Registry) CallTool(ctx context.Context, req CallRequest) (hub.CallResult, error) {
	p := hub.PrincipalFrom(ctx)
	if !r.sees(p, req.DeviceID) {
		return hub.CallResult{}, notFound(req.DeviceID)
	}
	start := r.opts.Now()
	res, home, err := r.callTool(ctx, req)
	outcome := hub.OutcomeOK
	switch {
	case err != nil:
		outcome = outcomeOf(err)
	case res.IsError:
		outcome = hub.OutcomeToolError
	}
	elapsed := r.opts.Now().Sub(start)
	r.opts.Metrics.Call("mcp", outcome, elapsed.Seconds())
	r.opts.Metrics.CallBy(req.Caller)
	rec := hub.CallRecord{
		DeviceID: req.DeviceID, Kind: "mcp", Tool: req.Tool, Caller: req.Caller,
		Arguments: summarize(req.Arguments), Outcome: outcome, Started: start,
		DurationMs: float64(elapsed.Microseconds()) / 1000,
	}
	by(&rec, p)
	if err != nil {
		rec.Result = hub.ErrorMessage(err)
	} else {
		rec.Result = summarize(res.Content)
	}
	r.finish(ctx, rec, home)
	return res, err
}

// callTool runs the call and returns the device's home with its answer.
func (r *Registry) callTool(ctx context.Context, req CallRequest) (hub.CallResult, string, error) {
	args, err := Arguments(req.Arguments)
	if err != nil {
		return hub.CallResult{}, "", err
	}
	timeout, err := r.timeout(req.Timeout)
	if err != nil {
		return hub.CallResult{}, "", err
	}
	e := r.entryLocked(req.DeviceID)
	if e == nil {
		return hub.CallResult{}, "", notFound(req.DeviceID)
	}
	tool, known := e.tools.lookup(req.Tool)
	link, transport, home := e.link, e.dev.Transport, e.dev.Home
	e.mu.Unlock()
	if !known {
		return hub.CallResult{}, home, &hub.Error{Code: hub.ENOTFOUND, Err: ErrUnknownTool,
			Message: fmt.Sprintf("device %q has no tool %q", req.DeviceID, req.Tool)}
	}
	if p := hub.PrincipalFrom(ctx); p != nil {
		if err := p.MayCall(req.DeviceID, home, req.Tool, tool.UserOnly); err != nil {
			return hub.CallResult{}, home, err
		}
	}
	// The call's time includes checking its arguments.
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := r.val.Validate(ctx, tool.InputSchema, args); err != nil {
		return hub.CallResult{}, home, err
	}
	if link == nil {
		return hub.CallResult{}, home, offline(req.DeviceID, transport)
	}
	res, err := link.conn.CallTool(ctx, req.Tool, args)
	return res, home, err
}

// Arguments is the one rule for the arguments of a call, a tool's or an
// IoT method's: a JSON object, where nothing or null means {}. It returns
// them as the device gets them, or an EINVALID error naming what was sent
// instead.
func Arguments(raw json.RawMessage) (json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return json.RawMessage("{}"), nil
	}
	if raw[0] != '{' {
		return nil, hub.Errorf(hub.EINVALID, "arguments must be a JSON object, not %s", jsonKind(raw))
	}
	return raw, nil
}

// jsonKind names the kind of a JSON value by its first byte.
func jsonKind(v []byte) string {
	switch v[0] {
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	default:
		return "a number"
	}
}

// SendIoTCommands validates commands against the device's IoT descriptors
// and sends them. Legacy devices never acknowledge commands: success means
// the commands were written to the connection; the state cache changes when
// the device reports its new state.
//
// A principal in ctx is applied as for CallTool, to each command's method.
func (r *Registry) SendIoTCommands(ctx context.Context, deviceID string, cmds []hub.IoTCommand, caller string) error {
	p := hub.PrincipalFrom(ctx)
	if !r.sees(p, deviceID) {
		return notFound(deviceID)
	}
	start := r.opts.Now()
	home, err := r.sendIoT(ctx, deviceID, cmds)
	outcome := hub.OutcomeSent
	if err != nil {
		outcome = outcomeOf(err)
	}
	elapsed := r.opts.Now().Sub(start)
	r.opts.Metrics.Call("iot", outcome, elapsed.Seconds())
	r.opts.Metrics.CallBy(caller)
	names := make([]string, len(cmds))
	for i, c := range cmds {
		names[i] = c.Name + "." + c.Method
	}
	args, _ := json.Marshal(cmds)
	rec := hub.CallRecord{
		DeviceID: deviceID, Kind: "iot", Tool: strings.Join(names, ", "), Caller: caller,
		Arguments: summarize(args), Outcome: outcome, Started: start,
		DurationMs: float64(elapsed.Microseconds()) / 1000,
	}
	by(&rec, p)
	if err != nil {
		rec.Result = hub.ErrorMessage(err)
	}
	r.finish(ctx, rec, home)
	return err
}

// sendIoT sends the commands and returns the device's home.
func (r *Registry) sendIoT(ctx context.Context, deviceID string, cmds []hub.IoTCommand) (string, error) {
	e := r.entryLocked(deviceID)
	if e == nil {
		return "", notFound(deviceID)
	}
	err := iot.ValidateCommands(e.things, cmds)
	link, transport, home := e.link, e.dev.Transport, e.dev.Home
	e.mu.Unlock()
	if err != nil {
		return home, err
	}
	if p := hub.PrincipalFrom(ctx); p != nil {
		for _, c := range cmds {
			if err := p.MayCall(deviceID, home, c.Name+"."+c.Method, false); err != nil {
				return home, err
			}
		}
	}
	if link == nil {
		return home, offline(deviceID, transport)
	}
	// Validated: each command's parameters are an object, nothing or null.
	cmds = slices.Clone(cmds)
	for i := range cmds {
		if cmds[i].Parameters, err = Arguments(cmds[i].Parameters); err != nil {
			return home, err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, r.opts.DefaultCallTimeout)
	defer cancel()
	return home, link.conn.SendIoT(ctx, cmds)
}

// finish numbers the record, writes it (the caller is answered once it is
// stored, see recorder) and announces it; the event and the call history
// carry the same id, and a client seeing the event finds the record.
// The event says who made the call, and carries the device's home for the
// streams' filters.
func (r *Registry) finish(ctx context.Context, rec hub.CallRecord, home string) {
	rec.ID = r.callID.Add(1)
	logCall(ctx, r.log, rec)
	r.rec.call(ctx, rec)
	r.bus.publish(hub.Event{Type: hub.EventCallFinished, DeviceID: rec.DeviceID, Time: r.opts.Now(), Data: rec, By: rec.By, Home: home})
}

// logCall is the info log's one line for a call: the device, the tool,
// its outcome (with the error's message when it failed) and who asked.
// Arguments and results are not in it: they may be personal.
func logCall(ctx context.Context, log *slog.Logger, rec hub.CallRecord) {
	if !log.Enabled(ctx, slog.LevelInfo) {
		return
	}
	attrs := []slog.Attr{slog.String("device", rec.DeviceID), slog.String("tool", rec.Tool),
		slog.String("outcome", rec.Outcome), slog.Float64("ms", rec.DurationMs)}
	switch rec.Outcome {
	case hub.OutcomeOK, hub.OutcomeSent, hub.OutcomeToolError:
	default:
		attrs = append(attrs, slog.String("err", rec.Result))
	}
	who := rec.By
	if who == "" {
		who = rec.Caller
	}
	attrs = append(attrs, slog.String("by", who), slog.String("via", rec.Caller))
	log.LogAttrs(ctx, slog.LevelInfo, "call", attrs...)
}

func (r *Registry) timeout(d time.Duration) (time.Duration, error) {
	switch {
	case d == 0:
		return r.opts.DefaultCallTimeout, nil
	case d < 0 || d > r.opts.MaxCallTimeout:
		return 0, &hub.Error{Code: hub.EINVALID, Err: ErrTimeoutRange,
			Message: fmt.Sprintf("the call timeout must be positive and at most %v, not %v", r.opts.MaxCallTimeout, d)}
	}
	return d, nil
}

// MaxCallTimeout is the longest timeout a call may ask for.
func (r *Registry) MaxCallTimeout() time.Duration { return r.opts.MaxCallTimeout }

// offline says what is true of an offline device on its transport (its
// last connection's, since the hub started): a WebSocket device connects
// only to talk, an MQTT device stays connected while it is powered on.
func offline(id, transport string) error {
	switch transport {
	case "websocket":
		return hub.Errorf(hub.EOFFLINE, "device %q is offline: on WebSocket it connects only during a conversation, so wake it (its wake word or button) and try again", id)
	case "mqtt":
		return hub.Errorf(hub.EOFFLINE, "device %q is offline: on MQTT it stays connected while powered on, so it is switched off, restarting or out of reach of the network; check its power and Wi-Fi", id)
	}
	return hub.Errorf(hub.EOFFLINE, "device %q is offline: a WebSocket device connects only during a conversation (wake it and try again); an MQTT device is offline only when switched off or out of reach", id)
}

func outcomeOf(err error) string {
	switch hub.ErrorCode(err) {
	case hub.ETIMEOUT:
		return hub.OutcomeTimeout
	case hub.EOFFLINE:
		return hub.OutcomeOffline
	case hub.EGONE:
		return hub.OutcomeGone
	case hub.EINVALID, hub.ENOTFOUND, hub.EBADREQUEST:
		return hub.OutcomeInvalid
	default:
		return hub.OutcomeDeviceError
	}
}

// summarize truncates JSON for the call history.
func summarize(b []byte) string { return hub.Truncate(b, 512) }

// sees reports whether p (nil: the hub itself) sees device id; an unknown
// device is left to the call's own not-found answer.
func (r *Registry) sees(p *hub.Principal, id string) bool {
	if p == nil || p.Admin {
		return true
	}
	e := r.entryLocked(id)
	if e == nil {
		return true
	}
	defer e.mu.Unlock()
	return p.Sees(e.dev.Home)
}

// by records in rec who asked.
func by(rec *hub.CallRecord, p *hub.Principal) {
	if p != nil {
		rec.By, rec.User = p.Actor(), p.User
	}
}
