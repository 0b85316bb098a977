package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/xiaozhi-hub/hub"
)

// SaveDevice inserts or updates d's identity and metadata. The derived
// fields (Online, ToolCount, ThingCount, ToolsHash, ToolsStale) are not
// stored, and the device's tools and things are left alone.
func (s *Store) SaveDevice(ctx context.Context, d hub.Device) error {
	if err := checkID(d.ID); err != nil {
		return err
	}
	args, err := deviceArgs(d)
	if err != nil {
		return fmt.Errorf("save device %s: %w", d.ID, err)
	}
	err = s.write(ctx, func(w *wtx) error {
		_, err := w.exec(`INSERT INTO devices (id, client_id, name, room, aliases, board, firmware,
			protocol_version, features, mcp, system_info, first_seen, last_seen, voice, home)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET client_id = excluded.client_id, name = excluded.name, voice = excluded.voice, home = excluded.home,
			room = excluded.room, aliases = excluded.aliases, board = excluded.board,
			firmware = excluded.firmware, protocol_version = excluded.protocol_version,
			features = excluded.features, mcp = excluded.mcp, system_info = excluded.system_info,
			first_seen = excluded.first_seen, last_seen = excluded.last_seen`, args...)
		return err
	})
	if err != nil {
		return fmt.Errorf("save device %s: %w", d.ID, err)
	}
	return nil
}

func deviceArgs(d hub.Device) ([]any, error) {
	if len(d.Features) > 0 && !json.Valid(d.Features) {
		return nil, hub.Errorf(hub.EINVALID, "features are not valid JSON")
	}
	if len(d.SystemInfo) > 0 && !json.Valid(d.SystemInfo) {
		return nil, hub.Errorf(hub.EINVALID, "system info is not valid JSON")
	}
	aliases, err := json.Marshal(d.Aliases)
	if err != nil {
		return nil, err
	}
	first, err := timeArg(d.FirstSeen)
	if err != nil {
		return nil, fmt.Errorf("first seen: %w", err)
	}
	last, err := timeArg(d.LastSeen)
	if err != nil {
		return nil, fmt.Errorf("last seen: %w", err)
	}
	return []any{d.ID, d.ClientID, d.Name, d.Room, string(aliases), d.Board, d.Firmware,
		d.ProtocolVersion, rawArg(d.Features), d.MCP, rawArg(d.SystemInfo), first, last, d.Voice, d.Home}, nil
}

// DeleteDevice removes a device with its tool list pointer, things, calls,
// events, its own persona and its memory. The tool list itself goes too
// unless another device shares it.
func (s *Store) DeleteDevice(ctx context.Context, id string) error {
	forget := func() {
		s.personas.forget(personaKey("device", id))
		s.memories.forget(id)
	}
	err := s.writeAnd(ctx, func(w *wtx) error {
		var hash sql.NullString
		err := w.scan(`SELECT tools_hash FROM devices WHERE id = ?`, []any{id}, &hash)
		if errors.Is(err, sql.ErrNoRows) {
			return soft(hub.Errorf(hub.ENOTFOUND, "device %q not found", id))
		}
		if err != nil {
			return err
		}
		for _, q := range []string{
			`DELETE FROM things WHERE device_id = ?`,
			`DELETE FROM calls WHERE device_id = ?`,
			`DELETE FROM events WHERE device_id = ?`,
			`DELETE FROM personas WHERE scope = 'device' AND id = ?`,
			`DELETE FROM memories WHERE device = ?`, // what was said there goes with it
			`DELETE FROM devices WHERE id = ?`,
		} {
			if _, err := w.exec(q, id); err != nil {
				return err
			}
		}
		s.forgetEventCounts()
		return collectToolSet(w, hash)
	}, forget)
	var he *hub.Error
	if errors.As(err, &he) && he.Code == hub.ENOTFOUND {
		return err
	}
	if err != nil {
		return fmt.Errorf("delete device %s: %w", id, err)
	}
	return nil
}

// collectToolSet deletes the tool set hash if no device points at it.
func collectToolSet(w *wtx, hash sql.NullString) error {
	if !hash.Valid {
		return nil
	}
	_, err := w.exec(`DELETE FROM tool_sets WHERE hash = ?1
		AND NOT EXISTS (SELECT 1 FROM devices WHERE tools_hash = ?1)`, hash.String)
	return err
}

// SaveTools points the device at the tool list identified by hash, storing
// the list unless a list with that hash is already stored (content for a
// hash never changes). An empty hash with no tools clears the device's list.
// A device that is not stored yet gets a minimal row (id only); SaveDevice
// fills it in later. The previous list is deleted when no device uses it.
func (s *Store) SaveTools(ctx context.Context, deviceID, hash string, tools []hub.Tool) error {
	if err := checkID(deviceID); err != nil {
		return err
	}
	var set any // the new hash, or NULL
	if hash != "" {
		set = hash
	} else if len(tools) > 0 {
		return hub.Errorf(hub.EINVALID, "save tools for %s: %d tools without a hash", deviceID, len(tools))
	}
	saved := time.Now().UnixNano()
	// The writer encodes tools after this call may have returned (its ctx
	// ended): give it a slice the caller cannot change.
	tools = slices.Clone(tools)
	err := s.write(ctx, func(w *wtx) error {
		// One query for the device's current list and whether the new
		// one is stored; either may be NULL / false.
		var old sql.NullString
		var stored bool
		if err := w.scan(`SELECT (SELECT tools_hash FROM devices WHERE id = ?),
			EXISTS (SELECT 1 FROM tool_sets WHERE hash = ?)`, []any{deviceID, hash}, &old, &stored); err != nil {
			return err
		}
		if hash != "" && !stored {
			if err := saveToolSet(w, hash, tools); err != nil {
				return err
			}
		}
		if _, err := w.exec(`INSERT INTO devices (id, tools_hash, tools_saved) VALUES (?, ?, ?)
			ON CONFLICT (id) DO UPDATE SET tools_hash = excluded.tools_hash,
				tools_saved = excluded.tools_saved`, deviceID, set, saved); err != nil {
			return err
		}
		if old.String == hash {
			return nil
		}
		return collectToolSet(w, old)
	})
	if err != nil {
		return fmt.Errorf("save tools for %s: %w", deviceID, err)
	}
	return nil
}

// saveToolSet stores tools under hash. The list is encoded here, in the
// writer, and only when the hash is new: most devices report a list that is
// already stored.
func saveToolSet(w *wtx, hash string, tools []hub.Tool) error {
	js, err := json.Marshal(tools)
	if err != nil {
		return fmt.Errorf("encode tools: %w", err)
	}
	_, err = w.exec(`INSERT INTO tool_sets (hash, tools_json) VALUES (?, ?)`, hash, string(js))
	return err
}

// SaveThing inserts or replaces the thing t.Name of the device, descriptor
// and state. Like SaveTools, it creates a minimal device row if needed.
func (s *Store) SaveThing(ctx context.Context, deviceID string, t hub.Thing) error {
	if err := checkID(deviceID); err != nil {
		return err
	}
	if t.Name == "" {
		return hub.Errorf(hub.EINVALID, "save thing for %s: thing name is empty", deviceID)
	}
	state, err := json.Marshal(t.State)
	if err != nil {
		return fmt.Errorf("save thing %s for %s: state: %w", t.Name, deviceID, err)
	}
	updated, err := timeArg(t.StateUpdated)
	if err != nil {
		return fmt.Errorf("save thing %s for %s: %w", t.Name, deviceID, err)
	}
	t.State, t.StateUpdated = nil, time.Time{}
	desc, err := json.Marshal(t)
	if err != nil {
		return fmt.Errorf("save thing %s for %s: descriptor: %w", t.Name, deviceID, err)
	}
	err = s.write(ctx, func(w *wtx) error {
		if _, err := w.exec(`INSERT INTO devices (id) VALUES (?) ON CONFLICT (id) DO NOTHING`, deviceID); err != nil {
			return err
		}
		_, err := w.exec(`INSERT INTO things (device_id, name, descriptor, state, state_updated)
			VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (device_id, name) DO UPDATE SET descriptor = excluded.descriptor,
				state = excluded.state, state_updated = excluded.state_updated`,
			deviceID, t.Name, string(desc), string(state), updated)
		return err
	})
	if err != nil {
		return fmt.Errorf("save thing %s for %s: %w", t.Name, deviceID, err)
	}
	return nil
}

// HasHistory reports whether the device has anything in the history: a
// call record (its own node's or, in a cluster, another's) or a voice
// turn.
func (s *Store) HasHistory(ctx context.Context, deviceID string) (bool, error) {
	var one int
	err := s.readRow(ctx, `SELECT 1 WHERE EXISTS (SELECT 1 FROM calls WHERE device_id = ?1)
		OR EXISTS (SELECT 1 FROM peer_calls WHERE device_id = ?1)
		OR EXISTS (SELECT 1 FROM events WHERE device_id = ?1 AND type = ?2)`, deviceID, hub.EventVoiceTurn).Scan(&one)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("history of %s: %w", deviceID, err)
	}
	return true, nil
}
