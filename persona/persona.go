// Package persona is the assistant as the people at a device know it: its
// persona (name, role, language, voice and greeting, set per device or per
// home and inherited by the home's devices, over defaults in Chinese and
// English) and its memory of the device's conversations (a short summary
// the configured model writes after each one, given to it in the next).
// People reach them through the API (package api's Personas interface)
// with the rights of their homes: a device or home they do not see is the
// unknown one, guests read and change nothing.
package persona

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/agent"
)

// Scopes of a stored persona.
const (
	ScopeDevice = "device"
	ScopeHome   = "home"
)

// Store keeps personas and memories (package store).
type Store interface {
	Persona(ctx context.Context, scope, id string) (hub.Persona, error)
	SavePersona(ctx context.Context, scope, id string, p hub.Persona) error
	Memory(ctx context.Context, device string) (hub.Memory, error)
	SaveMemory(ctx context.Context, m hub.Memory) error
}

// Devices finds a device as a principal sees it: one p does not see is the
// unknown device's ENOTFOUND (registry.DeviceAs).
type Devices interface {
	DeviceAs(p *hub.Principal, id string) (hub.Device, error)
}

// Homes checks a principal's role in a home (accounts.Service).
type Homes interface {
	RequireRole(p *hub.Principal, id string, min hub.Role, doing string) error
	Exists(id string) bool
}

// Options configure a Service.
type Options struct {
	Store   Store   // required
	Devices Devices // required
	Homes   Homes   // nil: no homes (only the admin reaches personas)
	// Model writes the memories (livesettings.LLM: the configured model;
	// asked as the device's voice, hub.DevicePrincipal, so its home's).
	Model agent.Provider
	// MaxMemory bounds a device's memory, in characters (default 1,000).
	MaxMemory int
	// OnMemory, if set, is told of each memory written (an event).
	OnMemory func(hub.Memory)
	Logger   *slog.Logger
	Now      func() time.Time
}

// Service serves personas and memories.
type Service struct {
	opts   Options
	ctx    context.Context // ends at Close: memories being written are abandoned
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	talks  map[string]*talk // the conversation going on at each device
	sem    chan struct{}    // memories being written
}

// New returns a Service; it starts nothing until a conversation ends.
func New(opts Options) *Service {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.MaxMemory <= 0 {
		opts.MaxMemory = DefaultMaxMemory
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Service{opts: opts, ctx: ctx, cancel: cancel, talks: map[string]*talk{}, sem: make(chan struct{}, writers)}
}

// Close abandons the memories being written and waits for their goroutines.
func (s *Service) Close() {
	s.cancel()
	s.wg.Wait()
}

// Field bounds, in characters.
const (
	maxName  = 64
	maxRole  = 4000
	maxShort = 64 // language, voice
	maxGreet = 500
)

// check bounds a persona from a request.
func check(p hub.Persona) error {
	for _, f := range []struct {
		name, v string
		max     int
	}{{"name", p.Name, maxName}, {"role", p.Role, maxRole}, {"language", p.Language, maxShort}, {"voice", p.Voice, maxShort}, {"greeting", p.Greeting, maxGreet}} {
		if !utf8.ValidString(f.v) {
			return hub.Errorf(hub.EINVALID, "%s: not valid UTF-8", f.name)
		}
		if n := utf8.RuneCountInString(f.v); n > f.max {
			return hub.Errorf(hub.EINVALID, "%s: %d characters is more than %d", f.name, n, f.max)
		}
	}
	return nil
}

// device returns the device p may read or change the persona and memory
// of: ENOTFOUND for one p does not see, EFORBIDDEN for a guest.
func (s *Service) device(p *hub.Principal, id, doing string) (hub.Device, error) {
	d, err := s.opts.Devices.DeviceAs(p, hub.NormalizeDeviceID(id))
	if err != nil {
		return d, err
	}
	if p != nil && !p.Admin && !p.RoleIn(d.Home).AtLeast(hub.RoleMember) {
		return d, hub.Errorf(hub.EFORBIDDEN, "only an owner or member of the device's home may %s", doing)
	}
	return d, nil
}

// home checks that p may read or change home id's persona.
func (s *Service) home(p *hub.Principal, id, doing string) error {
	if s.opts.Homes == nil || (p != nil && p.Admin && !s.opts.Homes.Exists(id)) {
		return hub.Errorf(hub.ENOTFOUND, "home %q is not one of yours (GET /api/homes lists them)", hub.Truncate([]byte(id), 64))
	}
	if p == nil || p.Admin {
		return nil
	}
	return s.opts.Homes.RequireRole(p, id, hub.RoleMember, doing)
}

// DevicePersona is a device's persona: its own, its home's and the one
// that applies.
func (s *Service) DevicePersona(ctx context.Context, p *hub.Principal, id string) (hub.PersonaView, error) {
	d, err := s.device(p, id, "read the assistant's persona")
	if err != nil {
		return hub.PersonaView{}, err
	}
	return s.deviceView(ctx, d)
}

// SetDevicePersona replaces a device's own persona (empty fields inherit).
func (s *Service) SetDevicePersona(ctx context.Context, p *hub.Principal, id string, v hub.Persona) (hub.PersonaView, error) {
	d, err := s.device(p, id, "change the assistant's persona")
	if err != nil {
		return hub.PersonaView{}, err
	}
	if err := check(v); err != nil {
		return hub.PersonaView{}, err
	}
	v.Updated = s.opts.Now().UTC()
	if err := s.opts.Store.SavePersona(ctx, ScopeDevice, d.ID, v); err != nil {
		return hub.PersonaView{}, err
	}
	return s.deviceView(ctx, d)
}

// HomePersona is a home's persona, inherited by its devices.
func (s *Service) HomePersona(ctx context.Context, p *hub.Principal, id string) (hub.PersonaView, error) {
	if err := s.home(p, id, "read the home's persona"); err != nil {
		return hub.PersonaView{}, err
	}
	own, err := s.opts.Store.Persona(ctx, ScopeHome, id)
	if err != nil {
		return hub.PersonaView{}, err
	}
	return hub.PersonaView{Own: own, Effective: merge(own, Default(own.Language))}, nil
}

// SetHomePersona replaces a home's persona.
func (s *Service) SetHomePersona(ctx context.Context, p *hub.Principal, id string, v hub.Persona) (hub.PersonaView, error) {
	if err := s.home(p, id, "change the home's persona"); err != nil {
		return hub.PersonaView{}, err
	}
	if err := check(v); err != nil {
		return hub.PersonaView{}, err
	}
	v.Updated = s.opts.Now().UTC()
	if err := s.opts.Store.SavePersona(ctx, ScopeHome, id, v); err != nil {
		return hub.PersonaView{}, err
	}
	return s.HomePersona(ctx, p, id)
}

func (s *Service) deviceView(ctx context.Context, d hub.Device) (hub.PersonaView, error) {
	own, err := s.opts.Store.Persona(ctx, ScopeDevice, d.ID)
	if err != nil {
		return hub.PersonaView{}, err
	}
	v := hub.PersonaView{Own: own}
	var home hub.Persona
	if d.Home != "" {
		if home, err = s.opts.Store.Persona(ctx, ScopeHome, d.Home); err != nil {
			return hub.PersonaView{}, err
		}
		v.Home = &home
	}
	set := merge(own, home)
	v.Effective = merge(set, Default(set.Language))
	return v, nil
}

// Effective is the persona that applies to a device's conversation (for
// the voice path): its own, else its home's, else the default in the
// language given (the device's, or the hub's), Chinese when none is.
func (s *Service) Effective(ctx context.Context, deviceID, home, language string) hub.Persona {
	own, err := s.opts.Store.Persona(ctx, ScopeDevice, deviceID)
	if err != nil {
		s.opts.Logger.Warn("persona: could not read the device's", "device", deviceID, "err", err)
	}
	var h hub.Persona
	if home != "" {
		if h, err = s.opts.Store.Persona(ctx, ScopeHome, home); err != nil {
			s.opts.Logger.Warn("persona: could not read the home's", "home", home, "err", err)
		}
	}
	set := merge(own, h)
	if set.Language == "" {
		set.Language = language
	}
	return merge(set, Default(set.Language))
}

// merge fills the fields a leaves empty from b.
func merge(a, b hub.Persona) hub.Persona {
	or := func(x, y string) string {
		if x != "" {
			return x
		}
		return y
	}
	a.Name, a.Role, a.Language = or(a.Name, b.Name), or(a.Role, b.Role), or(a.Language, b.Language)
	a.Voice, a.Greeting = or(a.Voice, b.Voice), or(a.Greeting, b.Greeting)
	if a.Updated.IsZero() {
		a.Updated = b.Updated
	}
	return a
}

// Default is the hub's persona in a language: English for "en…", Chinese
// otherwise (the firmware's own default). Voice is left to the settings.
func Default(language string) hub.Persona {
	if strings.HasPrefix(strings.ToLower(language), "en") {
		return hub.Persona{Name: "Xiaozhi", Language: "en",
			Role:     "You are Xiaozhi, a friendly voice assistant in this home. You help the people here with their devices and their questions, briefly and warmly.",
			Greeting: "Hi, I'm Xiaozhi. How can I help?"}
	}
	return hub.Persona{Name: "小智", Language: "zh",
		Role:     "你是小智，这个家里友好的语音助手。你帮助家里的人控制设备、回答问题，回答简短、亲切。",
		Greeting: "你好，我是小智，有什么可以帮你？"}
}
