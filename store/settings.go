package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/xiaozhi-hub/hub"
)

// LoadSettings returns every stored live setting (livesettings.Store).
func (s *Store) LoadSettings(ctx context.Context) ([]hub.StoredSetting, error) {
	var out []hub.StoredSetting
	err := s.each(ctx, `SELECT name, value, updated FROM settings ORDER BY name`, func(rows *sql.Rows) error {
		var st hub.StoredSetting
		var updated sql.NullInt64
		if err := rows.Scan(&st.Name, &st.Value, &updated); err != nil {
			return err
		}
		st.Updated = timeCol(updated)
		out = append(out, st)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("load settings: %w", err)
	}
	return out, nil
}

// SaveSettings stores set and removes the names in unset, in one
// transaction.
func (s *Store) SaveSettings(ctx context.Context, set []hub.StoredSetting, unset []string) error {
	err := s.write(ctx, func(w *wtx) error {
		for _, st := range set {
			updated, err := timeArg(st.Updated)
			if err != nil {
				return err
			}
			if _, err := w.exec(`INSERT OR REPLACE INTO settings (name, value, updated) VALUES (?, ?, ?)`, st.Name, st.Value, updated); err != nil {
				return err
			}
		}
		for _, name := range unset {
			if _, err := w.exec(`DELETE FROM settings WHERE name = ?`, name); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("save settings: %w", err)
	}
	return nil
}

// LoadHomeSettings returns every home's own stored settings, by home
// (livesettings.Store).
func (s *Store) LoadHomeSettings(ctx context.Context) (map[string][]hub.StoredSetting, error) {
	out := map[string][]hub.StoredSetting{}
	err := s.each(ctx, `SELECT home, name, value, updated FROM home_settings ORDER BY home, name`, func(rows *sql.Rows) error {
		var home string
		var st hub.StoredSetting
		var updated sql.NullInt64
		if err := rows.Scan(&home, &st.Name, &st.Value, &updated); err != nil {
			return err
		}
		st.Updated = timeCol(updated)
		out[home] = append(out[home], st)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("load home settings: %w", err)
	}
	return out, nil
}

// SaveHomeSettings stores set and removes the names in unset for one
// home, in one transaction.
func (s *Store) SaveHomeSettings(ctx context.Context, home string, set []hub.StoredSetting, unset []string) error {
	err := s.write(ctx, func(w *wtx) error {
		for _, st := range set {
			updated, err := timeArg(st.Updated)
			if err != nil {
				return err
			}
			if _, err := w.exec(`INSERT OR REPLACE INTO home_settings (home, name, value, updated) VALUES (?, ?, ?, ?)`, home, st.Name, st.Value, updated); err != nil {
				return err
			}
		}
		for _, name := range unset {
			if _, err := w.exec(`DELETE FROM home_settings WHERE home = ? AND name = ?`, home, name); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("save settings of home %s: %w", home, err)
	}
	return nil
}

// Persona returns the persona stored for a device or a home (scope
// "device" or "home"); a zero Persona when none is.
func (s *Store) Persona(ctx context.Context, scope, id string) (hub.Persona, error) {
	return s.personas.get(personaKey(scope, id), func() (hub.Persona, error) { return s.loadPersona(ctx, scope, id) })
}

// personaKey names a persona's row in the cache.
func personaKey(scope, id string) string { return scope + "\x00" + id }

func (s *Store) loadPersona(ctx context.Context, scope, id string) (hub.Persona, error) {
	var data string
	var updated sql.NullInt64
	err := s.readRow(ctx, `SELECT persona, updated FROM personas WHERE scope = ? AND id = ?`, scope, id).Scan(&data, &updated)
	if errors.Is(err, sql.ErrNoRows) {
		return hub.Persona{}, nil
	}
	if err != nil {
		return hub.Persona{}, fmt.Errorf("load persona of %s %s: %w", scope, id, err)
	}
	var p hub.Persona
	if err := json.Unmarshal([]byte(data), &p); err != nil {
		return hub.Persona{}, fmt.Errorf("persona of %s %s: %w", scope, id, err)
	}
	p.Updated = timeCol(updated)
	return p, nil
}

// SavePersona stores the persona of a device or a home; an empty one is
// removed.
func (s *Store) SavePersona(ctx context.Context, scope, id string, p hub.Persona) error {
	forget := func() { s.personas.forget(personaKey(scope, id)) }
	updated := p.Updated
	p.Updated = time.Time{}
	if p == (hub.Persona{}) {
		return s.execWriteAnd(ctx, forget, "delete persona", `DELETE FROM personas WHERE scope = ? AND id = ?`, scope, id)
	}
	data, err := json.Marshal(p)
	if err != nil {
		return err
	}
	at, err := timeArg(updated)
	if err != nil {
		return err
	}
	return s.execWriteAnd(ctx, forget, "save persona", `INSERT OR REPLACE INTO personas (scope, id, persona, updated) VALUES (?, ?, ?, ?)`, scope, id, string(data), at)
}

// Memory returns what is remembered of a device's conversations (a zero
// Memory, with Device set, when nothing is).
func (s *Store) Memory(ctx context.Context, device string) (hub.Memory, error) {
	return s.memories.get(device, func() (hub.Memory, error) { return s.loadMemory(ctx, device) })
}

func (s *Store) loadMemory(ctx context.Context, device string) (hub.Memory, error) {
	m := hub.Memory{Device: device}
	var updated sql.NullInt64
	err := s.readRow(ctx, `SELECT text, updated FROM memories WHERE device = ?`, device).Scan(&m.Text, &updated)
	if errors.Is(err, sql.ErrNoRows) {
		return m, nil
	}
	if err != nil {
		return m, fmt.Errorf("load memory of %s: %w", device, err)
	}
	m.Updated = timeCol(updated)
	return m, nil
}

// SaveMemory stores a device's memory; an empty text removes it.
func (s *Store) SaveMemory(ctx context.Context, m hub.Memory) error {
	forget := func() { s.memories.forget(m.Device) }
	if m.Text == "" {
		return s.execWriteAnd(ctx, forget, "delete memory", `DELETE FROM memories WHERE device = ?`, m.Device)
	}
	at, err := timeArg(m.Updated)
	if err != nil {
		return err
	}
	return s.execWriteAnd(ctx, forget, "save memory", `INSERT OR REPLACE INTO memories (device, text, updated) VALUES (?, ?, ?)`, m.Device, m.Text, at)
}

// Personas returns every stored persona, by scope ("device", "home") and
// id (for a cluster node to share what it had before it joined).
func (s *Store) Personas(ctx context.Context) (map[string]map[string]hub.Persona, error) {
	out := map[string]map[string]hub.Persona{}
	err := s.each(ctx, `SELECT scope, id, persona, updated FROM personas`, func(rows *sql.Rows) error {
		var scope, id, data string
		var updated sql.NullInt64
		if err := rows.Scan(&scope, &id, &data, &updated); err != nil {
			return err
		}
		var p hub.Persona
		if err := json.Unmarshal([]byte(data), &p); err != nil {
			return fmt.Errorf("persona of %s %s: %w", scope, id, err)
		}
		p.Updated = timeCol(updated)
		if out[scope] == nil {
			out[scope] = map[string]hub.Persona{}
		}
		out[scope][id] = p
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("load personas: %w", err)
	}
	return out, nil
}

// Memories returns every device's stored memory.
func (s *Store) Memories(ctx context.Context) ([]hub.Memory, error) {
	var out []hub.Memory
	err := s.each(ctx, `SELECT device, text, updated FROM memories ORDER BY device`, func(rows *sql.Rows) error {
		var m hub.Memory
		var updated sql.NullInt64
		if err := rows.Scan(&m.Device, &m.Text, &updated); err != nil {
			return err
		}
		m.Updated = timeCol(updated)
		out = append(out, m)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("load memories: %w", err)
	}
	return out, nil
}
