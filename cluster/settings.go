package cluster

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/xiaozhi-hub/hub"
)

// The settings people change while the hub runs are the cluster's too
// (docs/settings.md, "In a cluster"): the hub's live settings (ls.<name>),
// a home's own (lh.<home>.<name>), personas (pd.<device>, ph.<home>) and
// memories (me.<device>) are kept in the state bucket and applied on every
// node, so a voice set on one node speaks on all, and a device that moves
// to another node remembers. Keys are kept there as they are in each
// node's database: the bucket is the cluster's private state, as its
// password hashes and token hashes are.

// SettingsStore is the store of the live settings, the homes' own
// settings, personas and memories (package store).
type SettingsStore interface {
	LoadSettings(ctx context.Context) ([]hub.StoredSetting, error)
	SaveSettings(ctx context.Context, set []hub.StoredSetting, unset []string) error
	LoadHomeSettings(ctx context.Context) (map[string][]hub.StoredSetting, error)
	SaveHomeSettings(ctx context.Context, home string, set []hub.StoredSetting, unset []string) error
	Persona(ctx context.Context, scope, id string) (hub.Persona, error)
	SavePersona(ctx context.Context, scope, id string, p hub.Persona) error
	Personas(ctx context.Context) (map[string]map[string]hub.Persona, error)
	Memory(ctx context.Context, device string) (hub.Memory, error)
	SaveMemory(ctx context.Context, m hub.Memory) error
	Memories(ctx context.Context) ([]hub.Memory, error)
}

// SettingsReloader is the live settings as the cluster keeps them up to
// date (livesettings.Service.Reload): it reads its store again.
type SettingsReloader interface {
	Reload(ctx context.Context) error
}

func liveKey(name string) string           { return "ls." + key(name) }
func homeLiveKey(home, name string) string { return "lh." + key(home) + "." + key(name) }
func personaKey(scope, id string) string   { return "p" + scope[:1] + "." + key(id) } // pd. or ph.
func memoryKey(device string) string       { return "me." + key(device) }
func isSettingsKind(kind string) bool {
	return kind == "ls" || kind == "lh" || kind == "pd" || kind == "ph" || kind == "me"
}
func scopeOf(kind string) string {
	switch kind {
	case "pd":
		return "device"
	case "ph":
		return "home"
	}
	return ""
}

// SettingsStore wraps the node's own store: every change goes to the
// shared state first.
func (n *Node) SettingsStore(local SettingsStore) SettingsStore {
	n.mu.Lock()
	n.settingsLocal = local
	n.mu.Unlock()
	return &sharedSettings{SettingsStore: local, n: n}
}

type sharedSettings struct {
	SettingsStore
	n *Node
}

// share puts or removes the keys of a change of settings.
func (s *sharedSettings) share(ctx context.Context, what string, set []hub.StoredSetting, unset []string, keyOf func(string) string) error {
	for _, st := range set {
		if err := s.n.putJSON(ctx, keyOf(st.Name), st); err != nil {
			return unshared(what, err)
		}
	}
	for _, name := range unset {
		if err := s.n.remove(ctx, keyOf(name)); err != nil {
			return unshared(what, err)
		}
	}
	return nil
}

func (s *sharedSettings) SaveSettings(ctx context.Context, set []hub.StoredSetting, unset []string) error {
	if err := s.share(ctx, "the settings", set, unset, liveKey); err != nil {
		return err
	}
	return s.SettingsStore.SaveSettings(ctx, set, unset)
}

func (s *sharedSettings) SaveHomeSettings(ctx context.Context, home string, set []hub.StoredSetting, unset []string) error {
	keyOf := func(name string) string { return homeLiveKey(home, name) }
	if err := s.share(ctx, "the settings of the home "+home, set, unset, keyOf); err != nil {
		return err
	}
	return s.SettingsStore.SaveHomeSettings(ctx, home, set, unset)
}

func (s *sharedSettings) SavePersona(ctx context.Context, scope, id string, p hub.Persona) error {
	var err error
	if p == (hub.Persona{Updated: p.Updated}) {
		err = s.n.remove(ctx, personaKey(scope, id))
	} else {
		err = s.n.putJSON(ctx, personaKey(scope, id), p)
	}
	if err != nil {
		return unshared("the persona of "+id, err)
	}
	return s.SettingsStore.SavePersona(ctx, scope, id, p)
}

func (s *sharedSettings) SaveMemory(ctx context.Context, m hub.Memory) error {
	var err error
	if m.Text == "" {
		err = s.n.remove(ctx, memoryKey(m.Device))
	} else {
		err = s.n.putJSON(ctx, memoryKey(m.Device), m)
	}
	if err != nil {
		return unshared("the memory of "+m.Device, err)
	}
	return s.SettingsStore.SaveMemory(ctx, m)
}

// ServeSettings keeps the node's store and r up to date with the shared
// settings from now on: it applies those the shared state holds, then
// shares the ones only this node had (a node's settings from before it
// joined; what the shared state deleted stays deleted). The live settings
// open after the node started, so this is called then.
func (n *Node) ServeSettings(ctx context.Context, r SettingsReloader) error {
	n.mu.Lock()
	local := n.settingsLocal
	var keys []string
	for k := range n.seen {
		if kind, _, _, ok := parseKey(k); ok && isSettingsKind(kind) {
			keys = append(keys, k)
		}
	}
	n.mu.Unlock()
	if local == nil {
		return nil
	}
	for _, k := range keys {
		if err := n.applySetting(ctx, k); err != nil {
			n.log.Warn("could not apply a shared setting", "key", k, "err", err)
		}
	}
	if err := n.shareOwnSettings(ctx, local); err != nil {
		return err
	}
	// One reload for all of the above (applySetting reloads only once r
	// is set); a change the watch applies from now on reloads itself.
	n.mu.Lock()
	n.settingsReload = r
	n.mu.Unlock()
	return r.Reload(ctx)
}

// homeSettingsKeys are the keys of a home's own settings.
func (n *Node) homeSettingsKeys(home string) []string {
	prefix := "lh." + key(home) + "."
	n.mu.Lock()
	defer n.mu.Unlock()
	var keys []string
	for k, v := range n.seen {
		if strings.HasPrefix(k, prefix) && !v.deleted {
			keys = append(keys, k)
		}
	}
	return keys
}

// known reports whether the shared state has ever had k (deleted or not).
func (n *Node) known(k string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	_, ok := n.seen[k]
	return ok
}

// shareOwnSettings puts what only this node's store holds.
func (n *Node) shareOwnSettings(ctx context.Context, local SettingsStore) error {
	put := func(k string, v any) error {
		if n.known(k) {
			return nil
		}
		if err := n.putJSON(ctx, k, v); err != nil {
			return unshared("this node's settings", err)
		}
		return nil
	}
	hubSet, err := local.LoadSettings(ctx)
	if err != nil {
		return err
	}
	for _, st := range hubSet {
		if err := put(liveKey(st.Name), st); err != nil {
			return err
		}
	}
	homes, err := local.LoadHomeSettings(ctx)
	if err != nil {
		return err
	}
	for home, list := range homes {
		for _, st := range list {
			if err := put(homeLiveKey(home, st.Name), st); err != nil {
				return err
			}
		}
	}
	personas, err := local.Personas(ctx)
	if err != nil {
		return err
	}
	for scope, byID := range personas {
		for id, p := range byID {
			if err := put(personaKey(scope, id), p); err != nil {
				return err
			}
		}
	}
	memories, err := local.Memories(ctx)
	if err != nil {
		return err
	}
	for _, m := range memories {
		if err := put(memoryKey(m.Device), m); err != nil {
			return err
		}
	}
	return nil
}

// applySetting brings key k to its newest shared value (read at the time
// of applying, so that a late application never takes back a newer one):
// this node's own store, then the live settings.
func (n *Node) applySetting(ctx context.Context, k string) error {
	n.mu.Lock()
	local, reload := n.settingsLocal, n.settingsReload
	v, ok := n.seen[k]
	n.mu.Unlock()
	kind, id, name, parsed := parseKey(k)
	if local == nil || !ok || !parsed {
		return nil
	}
	var err error
	switch kind {
	case "ls", "lh":
		if kind == "ls" {
			name = id
		}
		var set []hub.StoredSetting
		var unset []string
		if v.deleted {
			unset = []string{name}
		} else {
			var st hub.StoredSetting
			if err := json.Unmarshal(v.val, &st); err != nil || st.Name != name {
				return hub.Errorf(hub.EINVALID, "malformed shared setting %q", name)
			}
			set = []hub.StoredSetting{st}
		}
		if kind == "ls" {
			err = local.SaveSettings(ctx, set, unset)
		} else {
			err = local.SaveHomeSettings(ctx, id, set, unset)
		}
		if err == nil && reload != nil {
			err = reload.Reload(ctx)
		}
	case "pd", "ph":
		var p hub.Persona
		if !v.deleted {
			if err := json.Unmarshal(v.val, &p); err != nil {
				return hub.Errorf(hub.EINVALID, "malformed shared persona of %q", id)
			}
		}
		err = local.SavePersona(ctx, scopeOf(kind), id, p)
	case "me":
		m := hub.Memory{Device: id}
		if !v.deleted {
			if err := json.Unmarshal(v.val, &m); err != nil || m.Device != id {
				return hub.Errorf(hub.EINVALID, "malformed shared memory of %q", id)
			}
		}
		err = local.SaveMemory(ctx, m)
	}
	return err
}
