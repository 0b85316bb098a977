// Package livesettings is the part of the hub's settings a person changes
// while it runs (issue 23): the agent's model (provider, model, base URL,
// key), speech recognition and synthesis (provider, model, language,
// voice, base URL, key) and the conversation timeout, named as in the
// config file. Values set through the API are stored (Store) and win over
// the config file and the environment; a flag wins over them, and such a
// setting cannot be changed here. On each change the speech providers and
// the agent's model are made again from the effective settings and
// swapped in at once (Current): the voice engine and the agent ask for
// them at each turn, so the next turn uses them without a restart.
//
// The providers hold no connection of their own (HTTP ones share the
// default transport, WebSocket ones dial per utterance), so the ones
// swapped out need no closing: a turn that holds one ends with it.
//
// Keys are stored in the data directory's database (private to the hub's
// owner) and never returned: a view says only whether one is set, and when.
package livesettings

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/agent"
	"github.com/xiaozhi-hub/hub/asr"
	"github.com/xiaozhi-hub/hub/config"
	"github.com/xiaozhi-hub/hub/internal/ratelimit"
	"github.com/xiaozhi-hub/hub/tts"
	"github.com/xiaozhi-hub/hub/voice/driver"
)

// Store keeps the values set through the API (package store).
type Store interface {
	LoadSettings(ctx context.Context) ([]hub.StoredSetting, error)
	// SaveSettings stores set and removes unset, in one transaction.
	SaveSettings(ctx context.Context, set []hub.StoredSetting, unset []string) error
}

// Options configure a Service.
type Options struct {
	Store Store // required
	// Homes keeps the homes' own settings; nil: homes set none.
	Homes HomeStore
	// Base is the configuration the hub started with (validated).
	Base config.Config
	// Sources says where each of Base's values came from
	// (config.Sources); nil: a value other than the default counts as
	// the file's.
	Sources map[string]string
	// Agent is the template of the agent's model: its HTTP client and
	// limits (provider, model, key and base URL come from the settings).
	Agent  agent.Config
	Logger *slog.Logger
	Now    func() time.Time
}

// Current is what the settings make now. It is never changed: a change
// makes a new one.
type Current struct {
	Config      config.Config // the effective settings
	Recognizer  driver.Recognizer
	Synthesizer driver.Synthesizer
	// Agent is the agent's completed model configuration; LLM its
	// provider, nil when the settings name none (LLMErr says what to set).
	Agent  agent.Config
	LLM    agent.Provider
	LLMErr error
}

// Service holds the stored settings and what they make.
type Service struct {
	opts   Options
	mu     sync.Mutex // one change at a time
	stored map[string]hub.StoredSetting
	homes  map[string]*homeState // by home id (home.go)
	// homeTests bounds each home's tests (home.go).
	homeTests *ratelimit.Keyed[struct{}]
	cur       atomic.Pointer[Current]
}

// Open loads the stored settings and makes the providers of the effective
// ones. Stored settings that no longer make a valid configuration (a
// provider this build lacks) are left out, with a warning, rather than
// keeping the hub from starting.
func Open(ctx context.Context, opts Options) (*Service, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	s := &Service{opts: opts, homeTests: newHomeTests()}
	if err := s.Reload(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// Reload reads the stored settings, the hub's and the homes', and applies
// them (at Open, and on a cluster node after another node's change reached
// its store). Stored settings that no longer make a valid configuration
// (a provider this build lacks) are left out, with a warning, rather than
// keeping the hub from starting.
func (s *Service) Reload(ctx context.Context) error {
	s.mu.Lock() // a change made meanwhile is read, not overwritten
	defer s.mu.Unlock()
	list, err := s.opts.Store.LoadSettings(ctx)
	if err != nil {
		return err
	}
	stored := map[string]hub.StoredSetting{}
	for _, st := range list {
		if _, err := lookup(st.Name); err != nil {
			s.opts.Logger.Warn("a stored setting is not known to this hub; ignored", "setting", st.Name)
			continue
		}
		stored[st.Name] = st
	}
	cur, err := s.make(stored)
	if err != nil {
		s.opts.Logger.Warn("the stored settings do not make a valid configuration; using the file's, flags' and environment's until they are set again", "err", err)
		stored = map[string]hub.StoredSetting{}
		if cur, err = s.make(stored); err != nil {
			return err
		}
	}
	homes, err := s.loadHomes(ctx)
	if err != nil {
		return err
	}
	s.stored, s.homes = stored, homes
	s.cur.Store(cur)
	return nil
}

// Current returns what the settings make now.
func (s *Service) Current() *Current { return s.cur.Load() }

// source is where name's effective value comes from, given what is stored.
func (s *Service) source(name string, stored map[string]hub.StoredSetting) string {
	src := s.opts.Sources[name]
	if src == "" {
		src = hub.SourceDefault
		def := config.Default()
		if sp, _ := lookup(name); s.opts.Sources == nil && sp.get(&s.opts.Base) != sp.get(&def) {
			src = hub.SourceFile
		}
	}
	if _, ok := stored[name]; ok && src != hub.SourceFlag {
		return hub.SourceStored
	}
	return src
}

// effective applies the stored values over the base configuration; a
// value fixed by a flag keeps the flag's.
func (s *Service) effective(stored map[string]hub.StoredSetting) (config.Config, error) {
	cfg := s.opts.Base
	for _, sp := range specs {
		st, ok := stored[sp.name]
		if !ok || s.source(sp.name, stored) != hub.SourceStored {
			continue
		}
		if err := sp.set(&cfg, st.Value); err != nil {
			return cfg, err
		}
	}
	if err := cfg.Validate(); err != nil {
		return cfg, hub.Errorf(hub.EINVALID, "%v", err)
	}
	return cfg, nil
}

// make builds what the stored values make.
func (s *Service) make(stored map[string]hub.StoredSetting) (*Current, error) {
	cfg, err := s.effective(stored)
	if err != nil {
		return nil, err
	}
	return s.build(cfg, nil)
}

// build makes the providers of cfg; those of the connections in own (a
// home's own: home.go) reach only public addresses.
func (s *Service) build(cfg config.Config, own map[string]bool) (*Current, error) {
	as, ts := cfg.ASR(), cfg.TTS()
	if own[TestASR] {
		as.Client = publicOnly
	}
	if own[TestTTS] {
		ts.Client = publicOnly
	}
	rec, err := asr.New(as)
	if err != nil {
		return nil, hub.Errorf(hub.EINVALID, "%v", err)
	}
	syn, err := tts.New(ts)
	if err != nil {
		return nil, hub.Errorf(hub.EINVALID, "%v", err)
	}
	c := &Current{Config: cfg, Recognizer: rec, Synthesizer: syn}
	a := s.opts.Agent
	a.Provider, a.Model, a.APIKey, a.BaseURL, a.AuthToken = cfg.AgentProvider, cfg.AgentModel, cfg.AgentAPIKey, cfg.AgentBaseURL, cfg.AgentAuthToken
	if own[TestAgent] {
		a.HTTPClient = publicOnly
	}
	c.Agent, c.LLM, c.LLMErr = a.Complete()
	if c.LLMErr != nil {
		// Not the caller's fault: this hub has no model set up.
		c.LLM, c.LLMErr = nil, &hub.Error{Code: hub.EUNAVAILABLE, Message: hub.ErrorMessage(c.LLMErr), Err: c.LLMErr}
	}
	return c, nil
}

// View is every live setting as GET /api/settings shows it: keys only as
// set or not, and when.
func (s *Service) View() map[string]hub.SettingView {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.viewLocked()
}

func (s *Service) viewLocked() map[string]hub.SettingView {
	cfg := s.cur.Load().Config
	out := make(map[string]hub.SettingView, len(specs))
	for _, sp := range specs {
		v := hub.SettingView{Source: s.source(sp.name, s.stored)}
		if st, ok := s.stored[sp.name]; ok && v.Source == hub.SourceStored {
			v.Updated = st.Updated
		}
		show(&v, sp.get(&cfg), sp.secret)
		out[sp.name] = v
	}
	return out
}

// show puts value in v, or, when hidden (a key, or an address that is
// not the asker's to see), only whether it is set.
func show(v *hub.SettingView, value string, hidden bool) {
	if hidden {
		set := value != ""
		v.Set = &set
		return
	}
	v.Value = &value
}

// Set stores and applies changes: a name with a value sets it, a name
// with nil removes the stored value (the file's, the environment's or the
// default applies again). Nothing is stored unless every change is valid
// together: an unknown name, a value fixed by a flag or a value the
// settings refuse is an error in the words of the settings.
func (s *Service) Set(ctx context.Context, changes map[string]*string) (map[string]hub.SettingView, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	next, set, unset, err := changed(s.stored, changes, s.opts.Now(), func(name string) error {
		if _, err := lookup(name); err != nil {
			return err
		}
		if s.source(name, nil) == hub.SourceFlag {
			return hub.Errorf(hub.ECONFLICT, "%s is set by the flag --%s, which wins over the settings stored here; remove the flag and restart the hub to change it here", name, name)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	cur, err := s.make(next)
	if err != nil {
		return nil, err
	}
	if err := s.opts.Store.SaveSettings(ctx, set, unset); err != nil {
		return nil, err
	}
	s.stored = next
	s.cur.Store(cur)
	s.logChange(ctx, "settings changed", changes)
	return s.viewLocked(), nil
}

// changed applies changes (nil: remove) over stored, each name checked by
// allowed and each value by checkValue: the settings that will be stored,
// and those to set and to remove.
func changed(stored map[string]hub.StoredSetting, changes map[string]*string, now time.Time, allowed func(string) error) (next map[string]hub.StoredSetting, set []hub.StoredSetting, unset []string, err error) {
	next = make(map[string]hub.StoredSetting, len(stored)+len(changes))
	for k, v := range stored {
		next[k] = v
	}
	for name, value := range changes {
		if err := allowed(name); err != nil {
			return nil, nil, nil, err
		}
		if value == nil {
			delete(next, name)
			unset = append(unset, name)
			continue
		}
		if err := checkValue(name, *value); err != nil {
			return nil, nil, nil, err
		}
		st := hub.StoredSetting{Name: name, Value: *value, Updated: now.UTC()}
		next[name] = st
		set = append(set, st)
	}
	return next, set, unset, nil
}

// logChange logs which settings changed, and who changed them.
func (s *Service) logChange(ctx context.Context, msg string, changes map[string]*string, attrs ...any) {
	names := make([]string, 0, len(changes))
	for n := range changes {
		names = append(names, n)
	}
	slices.Sort(names)
	by := "the hub"
	if p := hub.PrincipalFrom(ctx); p != nil {
		by = p.Actor()
	}
	s.opts.Logger.Info(msg, append(attrs, "settings", strings.Join(names, ","), "by", by)...)
}

// checkValue bounds a value: at most maxValue bytes of printable text.
func checkValue(name, v string) error {
	if len(v) > maxValue {
		return hub.Errorf(hub.EINVALID, "%s: the value is longer than %d bytes", name, maxValue)
	}
	if strings.IndexFunc(v, func(r rune) bool { return unicode.IsControl(r) || r == unicode.ReplacementChar }) >= 0 {
		return hub.Errorf(hub.EINVALID, "%s: the value holds control characters or invalid UTF-8", name)
	}
	return nil
}

// with returns the effective settings with given applied over them (for
// a test before saving); fixed ones are not refused here.
func (s *Service) with(given map[string]string) (config.Config, error) {
	cfg := s.cur.Load().Config
	for name, v := range given {
		sp, err := lookup(name)
		if err != nil {
			return cfg, err
		}
		if err := checkValue(name, v); err != nil {
			return cfg, err
		}
		if err := sp.set(&cfg, v); err != nil {
			return cfg, err
		}
	}
	if err := cfg.Validate(); err != nil {
		return cfg, hub.Errorf(hub.EINVALID, "%v", err)
	}
	return cfg, nil
}
