package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/xiaozhi-hub/hub"
)

// LoadServices returns every stored service with its cached tools
// (services.Store).
func (s *Store) LoadServices(ctx context.Context) ([]hub.Service, error) {
	var out []hub.Service
	err := s.each(ctx, `SELECT name, kind, home, token_hash, created, tools FROM services ORDER BY name`, func(rows *sql.Rows) error {
		var sv hub.Service
		var created sql.NullInt64
		var tools string
		if err := rows.Scan(&sv.Name, &sv.Kind, &sv.Home, &sv.TokenHash, &created, &tools); err != nil {
			return err
		}
		if err := json.Unmarshal([]byte(tools), &sv.Tools); err != nil {
			return fmt.Errorf("service %s: tools: %w", sv.Name, err)
		}
		sv.Created = timeCol(created)
		out = append(out, sv)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("load services: %w", err)
	}
	return out, nil
}

// SaveService inserts or replaces a service with its tools.
func (s *Store) SaveService(ctx context.Context, sv hub.Service) error {
	created, err := timeArg(sv.Created)
	if err != nil {
		return fmt.Errorf("save service %s: %w", sv.Name, err)
	}
	tools, err := toolsJSON(sv.Tools)
	if err != nil {
		return fmt.Errorf("save service %s: %w", sv.Name, err)
	}
	var hash any
	if len(sv.TokenHash) > 0 {
		hash = sv.TokenHash
	}
	return s.execWrite(ctx, "save service "+sv.Name, `INSERT OR REPLACE INTO services (name, kind, home, token_hash, created, tools)
		VALUES (?, ?, ?, ?, ?, ?)`, sv.Name, sv.Kind, sv.Home, hash, created, tools)
}

// SaveServiceTools replaces the cached tools of a stored service.
func (s *Store) SaveServiceTools(ctx context.Context, name string, tools []hub.Tool) error {
	b, err := toolsJSON(tools)
	if err != nil {
		return fmt.Errorf("save tools of service %s: %w", name, err)
	}
	return s.execWrite(ctx, "save tools of service "+name, `UPDATE services SET tools = ? WHERE name = ?`, b, name)
}

// DeleteService removes a service and its cached tools.
func (s *Store) DeleteService(ctx context.Context, name string) error {
	return s.execWrite(ctx, "delete service "+name, `DELETE FROM services WHERE name = ?`, name)
}

func toolsJSON(tools []hub.Tool) (string, error) {
	if tools == nil {
		tools = []hub.Tool{}
	}
	b, err := json.Marshal(tools)
	return string(b), err
}
