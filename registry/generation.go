package registry

import (
	"sync"
	"sync/atomic"

	"github.com/xiaozhi-hub/hub"
)

// generation counts the changes agents can see, so that the packages that
// show devices to agents (catalog, mcpserver) know when to look again
// without following the event stream. Each change is counted when it is
// published, after it is in memory: a reader that loads a generation before
// reading the registry sees at least that generation's state.
type generation struct {
	all   atomic.Uint64 // devices, their tool lists, things and thing states
	tools atomic.Uint64 // what tools exist: all, except thing states

	mu   sync.Mutex
	wake chan struct{} // closed at the next tools change; nil when nobody waits
}

// note counts ev if it is a change agents can see.
func (g *generation) note(ev hub.Event) {
	switch ev.Type {
	case hub.EventOnline, hub.EventOffline, hub.EventToolsChanged, hub.EventDeviceUpdated, hub.EventDeviceDeleted:
	case hub.EventIoTChanged:
		if m, _ := ev.Data.(map[string]any); m["descriptor"] != true {
			g.all.Add(1) // a state report changes no tool
			return
		}
	default:
		return
	}
	g.all.Add(1)
	g.tools.Add(1)
	g.mu.Lock()
	if g.wake != nil {
		close(g.wake)
		g.wake = nil
	}
	g.mu.Unlock()
}

// Generation returns a number that changes whenever something an agent can
// see changes: a device appears, goes, is renamed, connects or disconnects,
// or its tool list, IoT things or their state change. Load it before reading
// the registry; when it differs from the one loaded last time, look again.
func (r *Registry) Generation() uint64 { return r.gen.all.Load() }

// ToolsGeneration is like Generation but ignores IoT state reports, which
// change no tool: it changes when the tools agents may be offered could.
func (r *Registry) ToolsGeneration() uint64 { return r.gen.tools.Load() }

// ToolsChanged returns a channel that is closed once ToolsGeneration
// differs from since (at once if it does already).
func (r *Registry) ToolsChanged(since uint64) <-chan struct{} {
	g := &r.gen
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.tools.Load() != since {
		ch := make(chan struct{})
		close(ch)
		return ch
	}
	if g.wake == nil {
		g.wake = make(chan struct{})
	}
	return g.wake
}
