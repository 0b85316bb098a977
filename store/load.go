package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/xiaozhi-hub/hub"
)

// LoadAll returns every stored device, ordered by id, with its tools and
// things, read from one consistent snapshot. Device.ToolsHash is set from the
// stored tool list; the other derived fields are left zero.
func (s *Store) LoadAll(ctx context.Context) ([]hub.Snapshot, error) {
	snaps, err := s.loadAll(ctx)
	if err != nil {
		return nil, fmt.Errorf("load devices: %w", err)
	}
	return snaps, nil
}

func (s *Store) loadAll(ctx context.Context) ([]hub.Snapshot, error) {
	tx, err := s.read.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer func() { _ = tx.Rollback() }()

	sets, err := loadToolSets(ctx, tx)
	if err != nil {
		return nil, err
	}
	snaps, err := loadDevices(ctx, tx, sets)
	if err != nil {
		return nil, err
	}
	if err := loadThings(ctx, tx, snaps); err != nil {
		return nil, err
	}
	return snaps, nil
}

// loadToolSets decodes each stored tool list once.
func loadToolSets(ctx context.Context, tx *sql.Tx) (map[string][]hub.Tool, error) {
	rows, err := tx.QueryContext(ctx, `SELECT hash, tools_json FROM tool_sets`)
	if err != nil {
		return nil, fmt.Errorf("tool sets: %w", err)
	}
	defer rows.Close()
	sets := make(map[string][]hub.Tool)
	for rows.Next() {
		var hash string
		var js []byte
		if err := rows.Scan(&hash, &js); err != nil {
			return nil, fmt.Errorf("tool sets: %w", err)
		}
		var tools []hub.Tool
		if err := json.Unmarshal(js, &tools); err != nil {
			return nil, fmt.Errorf("tool set %s: %w", hash, err)
		}
		sets[hash] = tools
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("tool sets: %w", err)
	}
	return sets, nil
}

func loadDevices(ctx context.Context, tx *sql.Tx, sets map[string][]hub.Tool) ([]hub.Snapshot, error) {
	rows, err := tx.QueryContext(ctx, `SELECT id, client_id, name, room, aliases, board, firmware,
		protocol_version, features, mcp, system_info, first_seen, last_seen, tools_hash, tools_saved, voice, home
		FROM devices ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("devices: %w", err)
	}
	defer rows.Close()
	var snaps []hub.Snapshot
	for rows.Next() {
		var d hub.Device
		var aliases []byte
		var features, sysInfo, hash sql.NullString
		var first, last, saved sql.NullInt64
		if err := rows.Scan(&d.ID, &d.ClientID, &d.Name, &d.Room, &aliases, &d.Board, &d.Firmware,
			&d.ProtocolVersion, &features, &d.MCP, &sysInfo, &first, &last, &hash, &saved, &d.Voice, &d.Home); err != nil {
			return nil, fmt.Errorf("devices: %w", err)
		}
		if err := json.Unmarshal(aliases, &d.Aliases); err != nil {
			return nil, fmt.Errorf("device %s: aliases: %w", d.ID, err)
		}
		d.Features, d.SystemInfo = rawCol(features), rawCol(sysInfo)
		d.FirstSeen, d.LastSeen = timeCol(first), timeCol(last)
		d.ToolsHash = hash.String
		snap := hub.Snapshot{Device: d, ToolsHash: hash.String, ToolsSaved: timeCol(saved)}
		if hash.Valid {
			tools, ok := sets[hash.String]
			if !ok {
				return nil, fmt.Errorf("device %s: tool set %s is missing", d.ID, hash.String)
			}
			// Each device gets its own slice; the Tool values' JSON bytes
			// are shared and must not be modified.
			snap.Tools = slices.Clone(tools)
		}
		snaps = append(snaps, snap)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("devices: %w", err)
	}
	return snaps, nil
}

// loadThings attaches things to snaps (ordered by device id).
func loadThings(ctx context.Context, tx *sql.Tx, snaps []hub.Snapshot) error {
	rows, err := tx.QueryContext(ctx, `SELECT device_id, descriptor, state, state_updated
		FROM things ORDER BY device_id, name`)
	if err != nil {
		return fmt.Errorf("things: %w", err)
	}
	defer rows.Close()
	i := 0
	for rows.Next() {
		var id string
		var desc, state []byte
		var updated sql.NullInt64
		if err := rows.Scan(&id, &desc, &state, &updated); err != nil {
			return fmt.Errorf("things: %w", err)
		}
		for i < len(snaps) && snaps[i].Device.ID < id {
			i++
		}
		if i == len(snaps) || snaps[i].Device.ID != id {
			return fmt.Errorf("things: device %s is missing", id)
		}
		var t hub.Thing
		if err := json.Unmarshal(desc, &t); err != nil {
			return fmt.Errorf("device %s: thing descriptor: %w", id, err)
		}
		if err := json.Unmarshal(state, &t.State); err != nil {
			return fmt.Errorf("device %s: thing %s state: %w", id, t.Name, err)
		}
		t.StateUpdated = timeCol(updated)
		snaps[i].Things = append(snaps[i].Things, t)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("things: %w", err)
	}
	return nil
}
