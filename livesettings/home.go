package livesettings

import (
	"context"
	"strings"
	"time"

	"golang.org/x/time/rate"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/config"
	"github.com/xiaozhi-hub/hub/internal/ratelimit"
)

// A home's own settings (issue 23): its owner chooses the agent's model
// and the voices for the home's devices, with the owner's own keys; what
// the home does not set is the hub's. The rules, all here:
//
//   - An owner sets any live setting but conversation-timeout, which is
//     the hub's.
//   - Each of agent, asr and tts has a connection: its provider, its
//     address (base URL) and its key. A home that names a provider other
//     than the hub's, or an address of its own, has a connection of its
//     own: its address and key are the home's or the provider's defaults,
//     never the hub's, so the hub's keys go only where the admin sent them.
//     A home that sets only a key uses it with the hub's provider and
//     address. Model, voice and language fall back one by one.
//   - A connection of the home's own reaches only public addresses
//     (public.go): an owner cannot point the hub at the machines around it.
//   - A device's voice (its turns and its memory) uses its home's
//     settings; everything else uses the hub's.

// groups are the connections, by the settings' prefix.
var groups = []string{TestAgent, TestASR, TestTTS}

// HomeStore keeps the homes' own settings (package store).
type HomeStore interface {
	LoadHomeSettings(ctx context.Context) (map[string][]hub.StoredSetting, error)
	// SaveHomeSettings stores set and removes unset for one home, in one
	// transaction.
	SaveHomeSettings(ctx context.Context, home string, set []hub.StoredSetting, unset []string) error
}

// homeState is one home's stored settings and what they make (nil until
// asked for after a change).
type homeState struct {
	stored  map[string]hub.StoredSetting
	cur     *Current
	against *Current // the hub's Current cur was made with
}

// forHome reports whether a home may set name.
func forHome(name string) error {
	if _, err := lookup(name); err != nil {
		return err
	}
	if name == "conversation-timeout" {
		return hub.Errorf(hub.EINVALID, "conversation-timeout is the hub's setting, not a home's: the admin sets it in the hub's settings")
	}
	return nil
}

// homeConfig is the hub's effective settings with a home's stored values
// over them, by the rules above, and which connections are the home's own.
func homeConfig(hubCfg config.Config, stored map[string]hub.StoredSetting) (config.Config, map[string]bool, error) {
	cfg := hubCfg
	own := map[string]bool{}
	for _, g := range groups {
		provider, _ := lookup(g + "-provider")
		hubProvider := provider.get(&hubCfg)
		p, setP := stored[g+"-provider"]
		_, setURL := stored[g+"-base-url"]
		if (setP && p.Value != hubProvider) || setURL {
			own[g] = true
			for _, n := range []string{"-base-url", "-api-key"} {
				sp, _ := lookup(g + n)
				_ = sp.set(&cfg, "")
			}
			if g == TestAgent {
				cfg.AgentAuthToken = ""
			}
		}
	}
	for _, sp := range specs {
		if st, ok := stored[sp.name]; ok {
			if err := sp.set(&cfg, st.Value); err != nil {
				return cfg, nil, err
			}
		}
	}
	if err := cfg.Validate(); err != nil {
		return cfg, nil, hub.Errorf(hub.EINVALID, "%v", err)
	}
	return cfg, own, nil
}

// loadHomes reads the homes' stored settings (Reload).
func (s *Service) loadHomes(ctx context.Context) (map[string]*homeState, error) {
	homes := map[string]*homeState{}
	if s.opts.Homes == nil {
		return homes, nil
	}
	all, err := s.opts.Homes.LoadHomeSettings(ctx)
	if err != nil {
		return nil, err
	}
	for home, list := range all {
		hs := &homeState{stored: map[string]hub.StoredSetting{}}
		for _, st := range list {
			if forHome(st.Name) == nil {
				hs.stored[st.Name] = st
			}
		}
		homes[home] = hs
	}
	return homes, nil
}

// For returns what the settings make for a device in home: the hub's
// Current when the home sets nothing. Settings of a home that no longer
// make a valid configuration with the hub's (the hub's changed under
// them) fall back to the hub's, with a warning.
func (s *Service) For(home string) *Current {
	hubCur := s.cur.Load()
	if home == "" {
		return hubCur
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	hs := s.homes[home]
	if hs == nil || len(hs.stored) == 0 {
		return hubCur
	}
	if hs.cur != nil && hs.against == hubCur {
		return hs.cur
	}
	cfg, own, err := homeConfig(hubCur.Config, hs.stored)
	var c *Current
	if err == nil {
		c, err = s.build(cfg, own)
	}
	if err != nil {
		s.opts.Logger.Warn("a home's own settings no longer make a valid configuration with the hub's; its devices use the hub's until its owner changes them", "home", home, "err", err)
		c = hubCur
	}
	hs.cur, hs.against = c, hubCur
	return c
}

// HomeView is every setting a home may set as its owner sees it: the
// home's own values (source "home"), else what its devices get (source
// "hub", or "default" for an address or key a connection of the home's
// own leaves empty). Keys show only whether one is set, and the hub's
// addresses only whether one is set: they are the admin's.
func (s *Service) HomeView(home string) map[string]hub.SettingView {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.homeViewLocked(home)
}

func (s *Service) homeViewLocked(home string) map[string]hub.SettingView {
	stored := map[string]hub.StoredSetting{}
	if hs := s.homes[home]; hs != nil {
		stored = hs.stored
	}
	hubCfg := s.cur.Load().Config
	cfg, own, err := homeConfig(hubCfg, stored)
	if err != nil {
		cfg, own = hubCfg, nil
	}
	out := make(map[string]hub.SettingView, len(specs))
	for _, sp := range specs {
		if forHome(sp.name) != nil {
			continue
		}
		v := hub.SettingView{Source: SourceHub}
		st, mine := stored[sp.name]
		switch {
		case mine:
			v.Source, v.Updated = SourceHome, st.Updated
		case own[group(sp.name)] && (strings.HasSuffix(sp.name, "-base-url") || sp.secret):
			v.Source = hub.SourceDefault
		}
		show(&v, sp.get(&cfg), sp.secret || (!mine && strings.HasSuffix(sp.name, "-base-url")))
		out[sp.name] = v
	}
	return out
}

// Sources of a home's settings view.
const (
	SourceHome = "home" // set for this home by its owner
	SourceHub  = "hub"  // the hub's setting, which the home does not set
)

// group is the connection a setting belongs to ("agent", "asr", "tts").
func group(name string) string {
	g, _, _ := strings.Cut(name, "-")
	return g
}

// SetHome stores and applies changes to a home's own settings, as Set
// does for the hub's: a name with nil removes the home's value (the
// hub's applies again), all or nothing, checked together with the hub's
// settings. The caller has checked that the principal owns the home.
func (s *Service) SetHome(ctx context.Context, home string, changes map[string]*string) (map[string]hub.SettingView, error) {
	if s.opts.Homes == nil {
		return nil, hub.Errorf(hub.EUNAVAILABLE, "homes' own settings are not set up on this hub")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	hs := s.homes[home]
	if hs == nil {
		hs = &homeState{stored: map[string]hub.StoredSetting{}}
	}
	next, set, unset, err := changed(hs.stored, changes, s.opts.Now(), forHome)
	if err != nil {
		return nil, err
	}
	cfg, own, err := homeConfig(s.cur.Load().Config, next)
	if err != nil {
		return nil, err
	}
	if _, err := s.build(cfg, own); err != nil {
		return nil, err
	}
	if err := s.opts.Homes.SaveHomeSettings(ctx, home, set, unset); err != nil {
		return nil, err
	}
	s.homes[home] = &homeState{stored: next} // made again at its next turn
	s.logChange(ctx, "home settings changed", changes, "home", home)
	return s.homeViewLocked(home), nil
}

// ForgetHome drops a deleted home's settings from memory (the store
// removes them with the home).
func (s *Service) ForgetHome(home string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.homes, home)
}

// homeTests bounds a home's tests: a burst of 5, then one every 12 s. A
// test makes a request to an address its owner chose; the bound keeps the
// hub from being used to probe or flood the internet.
func newHomeTests() *ratelimit.Keyed[struct{}] {
	return ratelimit.NewKeyed[struct{}](rate.Every(12*time.Second), 5, 0)
}

// TestHome is Test with a home's settings (given applied over them).
func (s *Service) TestHome(ctx context.Context, home, what string, given map[string]string) (hub.SettingsTest, error) {
	r := hub.SettingsTest{What: what}
	if err := checkWhat(what); err != nil {
		return r, err
	}
	s.mu.Lock()
	now := s.opts.Now()
	if ok, wait := ratelimit.Take(&s.homeTests.Get(home, now).Limiter, now); !ok {
		s.mu.Unlock()
		e := hub.Errorf(hub.ETOOMANY, "too many tests of this home's settings; try again in %d s", int(wait/time.Second)+1)
		e.RetryAfter = wait
		return r, e
	}
	next := map[string]hub.StoredSetting{}
	if hs := s.homes[home]; hs != nil {
		for k, v := range hs.stored {
			next[k] = v
		}
	}
	s.mu.Unlock()
	for name, v := range given {
		if err := forHome(name); err != nil {
			return r, err
		}
		if err := checkValue(name, v); err != nil {
			return r, err
		}
		next[name] = hub.StoredSetting{Name: name, Value: v}
	}
	cfg, own, err := homeConfig(s.cur.Load().Config, next)
	if err != nil {
		return problem(r, ProblemInvalid, err), nil
	}
	return s.run(ctx, r, cfg, own), nil
}
