package services

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/registry"
)

// CallDeviceID is what a service's calls are recorded under in the call
// history (hub.CallRecord.DeviceID): "service:" and its name.
func CallDeviceID(name string) string { return hub.ServicePrefix + name }

// CallService runs a service's tool with the rights of the principal in
// ctx: a service it does not see is ENOTFOUND exactly as an unknown one;
// a guest of the service's home may not run user-only tools nor tools
// that reboot, upgrade, reset or unlock (hub.RestrictedTool). It fails
// without contacting the service when the tool is unknown (ENOTFOUND),
// the arguments do not match its inputSchema (EINVALID) or the service is
// offline (EOFFLINE, at once). Otherwise the service's answer, or
// ETIMEOUT, EDEVICE (it answered with an error, or a result over
// Options.MaxResultBytes), EBUSY, EGONE. Every call to a service the
// caller sees is recorded, as device calls are, with Kind "service".
func (m *Manager) CallService(ctx context.Context, c hub.ServiceCall) (hub.CallResult, error) {
	p := hub.PrincipalFrom(ctx)
	e, _, err := m.entry(p, c.Service)
	if err != nil {
		return hub.CallResult{}, err
	}
	home := e.svc.Home
	start := time.Now()
	args, res, err := m.call(ctx, p, c)
	if m.opts.Record != nil {
		rec := hub.CallRecord{DeviceID: CallDeviceID(c.Service), Kind: "service", Tool: c.Tool, Caller: c.Caller,
			Started: start, DurationMs: float64(time.Since(start).Microseconds()) / 1000}
		if args == nil {
			args = c.Arguments
		}
		m.opts.Record(ctx, rec, home, args, res, err)
	}
	return res, err
}

func (m *Manager) call(ctx context.Context, p *hub.Principal, c hub.ServiceCall) ([]byte, hub.CallResult, error) {
	args, err := registry.Arguments(c.Arguments)
	if err != nil {
		return nil, hub.CallResult{}, err
	}
	timeout := c.Timeout
	switch {
	case timeout == 0:
		timeout = m.opts.CallTimeout
	case timeout < 0 || timeout > m.opts.MaxCallTimeout:
		return args, hub.CallResult{}, &hub.Error{Code: hub.EINVALID, Err: registry.ErrTimeoutRange,
			Message: fmt.Sprintf("the call timeout must be positive and at most %v, not %v", m.opts.MaxCallTimeout, timeout)}
	}
	m.mu.Lock()
	e, ok := m.entries[c.Service]
	var tool hub.Tool
	var known bool
	var l link
	var home string
	if ok {
		l, home = e.link, e.svc.Home
		if l == nil && e.svc.Kind == hub.ServiceEndpoint && m.opts.Elsewhere != nil {
			l = elsewhere{m.opts.Elsewhere, c.Service}
		}
		for _, t := range e.svc.Tools {
			if t.Name == c.Tool {
				tool, known = t, true
				break
			}
		}
	}
	m.mu.Unlock()
	if !ok {
		return args, hub.CallResult{}, notFound(c.Service)
	}
	if !known {
		return args, hub.CallResult{}, hub.Errorf(hub.ENOTFOUND, "service %q has no tool %q (GET /api/services lists its tools)", c.Service, c.Tool)
	}
	if err := mayCall(p, c.Service, home, tool); err != nil {
		return args, hub.CallResult{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := m.val.Validate(ctx, tool.InputSchema, args); err != nil {
		return args, hub.CallResult{}, err
	}
	res, err := m.run(ctx, c.Service, l, c.Tool, args)
	return args, res, err
}

// run calls tool on link l of service name.
func (m *Manager) run(ctx context.Context, name string, l link, tool string, args []byte) (hub.CallResult, error) {
	if l == nil {
		return hub.CallResult{}, offline(name)
	}
	res, err := l.CallTool(ctx, tool, args)
	if hub.ErrorCode(err) == hub.EOFFLINE {
		return hub.CallResult{}, offline(name)
	}
	if err != nil {
		return hub.CallResult{}, asService(err)
	}
	if len(res.Content) > m.opts.MaxResultBytes {
		return hub.CallResult{}, hub.Errorf(hub.EDEVICE, "service %q answered %s with %d bytes, more than the %d the hub passes on", name, tool, len(res.Content), m.opts.MaxResultBytes)
	}
	if len(res.Content) == 0 {
		res.Content = []byte("[]")
	}
	return res, nil
}

func offline(name string) error {
	return hub.Errorf(hub.EOFFLINE, "service %q is offline: its program is not connected (GET /api/services shows its state; an endpoint's program reconnects by itself, a configured server is retried)", name)
}

// elsewhere is the link of a service connected to another node.
type elsewhere struct {
	e    Elsewhere
	name string
}

func (l elsewhere) CallTool(ctx context.Context, tool string, args []byte) (hub.CallResult, error) {
	return l.e.Call(ctx, l.name, tool, args)
}

// CallHeld runs a call another node of a cluster asked for, on the
// connection held here: that node checked the caller's rights and the
// arguments and records the call. EOFFLINE when the service is not
// connected here (any more).
func (m *Manager) CallHeld(ctx context.Context, name, tool string, args []byte) (hub.CallResult, error) {
	m.mu.Lock()
	var l link
	if e, ok := m.entries[name]; ok {
		l = e.link
	}
	m.mu.Unlock()
	return m.run(ctx, name, l, tool, args)
}

// mayCall applies the caller's role in the service's home: guests may not
// run user-only tools nor those that reboot, upgrade, reset or unlock. The
// hub's own services ("") are everyone's, with the rights of the caller's
// best role: a guest in every home it has (or in none) is a guest there.
func mayCall(p *hub.Principal, service, home string, t hub.Tool) error {
	switch {
	case p == nil || p.Admin:
		return nil
	case home != "":
		return p.MayCall(CallDeviceID(service), home, t.Name, t.UserOnly)
	}
	for _, r := range p.Homes {
		if r.AtLeast(hub.RoleMember) {
			return nil
		}
	}
	if t.UserOnly || hub.RestrictedTool(t.Name) {
		return hub.Errorf(hub.EFORBIDDEN, "a guest may not call %s of service %q: it is for people only, or it reboots, upgrades, resets or unlocks; ask a member or owner of a home", t.Name, service)
	}
	return nil
}

// asService rewords the MCP client's errors, written for devices, for a
// service.
func asService(err error) error {
	he, ok := err.(*hub.Error)
	if !ok {
		return err
	}
	msg := strings.Replace(he.Message, "device error: ", "service error: ", 1)
	msg = strings.ReplaceAll(msg, "the device", "the service")
	return &hub.Error{Code: he.Code, Message: msg, Err: he.Err, RetryAfter: he.RetryAfter}
}
