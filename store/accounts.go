package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/xiaozhi-hub/hub"
)

// LoadAccounts returns every user, home and user token (accounts.Store).
func (s *Store) LoadAccounts(ctx context.Context) ([]hub.User, []hub.Home, []hub.UserToken, error) {
	var users []hub.User
	err := s.each(ctx, `SELECT name, password_hash, created FROM users ORDER BY name`, func(rows *sql.Rows) error {
		var u hub.User
		var created sql.NullInt64
		if err := rows.Scan(&u.Name, &u.PasswordHash, &created); err != nil {
			return err
		}
		u.Created = timeCol(created)
		users = append(users, u)
		return nil
	})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("load users: %w", err)
	}
	var homes []hub.Home
	err = s.each(ctx, `SELECT id, name, created, members FROM homes ORDER BY id`, func(rows *sql.Rows) error {
		var h hub.Home
		var created sql.NullInt64
		var members string
		if err := rows.Scan(&h.ID, &h.Name, &created, &members); err != nil {
			return err
		}
		if err := json.Unmarshal([]byte(members), &h.Members); err != nil {
			return fmt.Errorf("home %s: members: %w", h.ID, err)
		}
		h.Created = timeCol(created)
		homes = append(homes, h)
		return nil
	})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("load homes: %w", err)
	}
	var tokens []hub.UserToken
	err = s.each(ctx, `SELECT id, user, kind, name, hash, created, expires FROM user_tokens ORDER BY created`, func(rows *sql.Rows) error {
		var t hub.UserToken
		var created, expires sql.NullInt64
		if err := rows.Scan(&t.ID, &t.User, &t.Kind, &t.Name, &t.Hash, &created, &expires); err != nil {
			return err
		}
		t.Created, t.Expires = timeCol(created), timeCol(expires)
		tokens = append(tokens, t)
		return nil
	})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("load user tokens: %w", err)
	}
	return users, homes, tokens, nil
}

// each runs a read query and calls row for each row.
func (s *Store) each(ctx context.Context, q string, row func(*sql.Rows) error) error {
	rows, err := s.read.QueryContext(ctx, q)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := row(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// SaveUser inserts or updates a user.
func (s *Store) SaveUser(ctx context.Context, u hub.User) error {
	created, err := timeArg(u.Created)
	if err != nil {
		return fmt.Errorf("save user %s: %w", u.Name, err)
	}
	return s.execWrite(ctx, "save user "+u.Name, `INSERT INTO users (name, password_hash, created) VALUES (?, ?, ?)
		ON CONFLICT (name) DO UPDATE SET password_hash = excluded.password_hash`, u.Name, u.PasswordHash, created)
}

// DeleteUser removes a user and their tokens.
func (s *Store) DeleteUser(ctx context.Context, name string) error {
	err := s.write(ctx, func(w *wtx) error {
		if _, err := w.exec(`DELETE FROM user_tokens WHERE user = ?`, name); err != nil {
			return err
		}
		_, err := w.exec(`DELETE FROM users WHERE name = ?`, name)
		return err
	})
	if err != nil {
		return fmt.Errorf("delete user %s: %w", name, err)
	}
	return nil
}

// SaveHome inserts or updates a home with its members.
func (s *Store) SaveHome(ctx context.Context, h hub.Home) error {
	members, err := json.Marshal(h.Members)
	if err != nil {
		return fmt.Errorf("save home %s: %w", h.ID, err)
	}
	created, err := timeArg(h.Created)
	if err != nil {
		return fmt.Errorf("save home %s: %w", h.ID, err)
	}
	return s.execWrite(ctx, "save home "+h.ID, `INSERT INTO homes (id, name, created, members) VALUES (?, ?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET name = excluded.name, members = excluded.members`, h.ID, h.Name, created, string(members))
}

// DeleteHome removes a home with its own settings (keys included) and its
// persona, in one transaction; its devices keep its id until moved.
func (s *Store) DeleteHome(ctx context.Context, id string) error {
	err := s.writeAnd(ctx, func(w *wtx) error {
		for _, q := range []string{
			`DELETE FROM homes WHERE id = ?`,
			`DELETE FROM home_settings WHERE home = ?`,
			`DELETE FROM personas WHERE scope = 'home' AND id = ?`,
		} {
			if _, err := w.exec(q, id); err != nil {
				return err
			}
		}
		return nil
	}, func() { s.personas.forget(personaKey("home", id)) })
	if err != nil {
		return fmt.Errorf("delete home %s: %w", id, err)
	}
	return nil
}

// SaveToken inserts or replaces a user token.
func (s *Store) SaveToken(ctx context.Context, t hub.UserToken) error {
	created, err := timeArg(t.Created)
	if err != nil {
		return fmt.Errorf("save token: %w", err)
	}
	expires, err := timeArg(t.Expires)
	if err != nil {
		return fmt.Errorf("save token: %w", err)
	}
	return s.execWrite(ctx, "save token", `INSERT OR REPLACE INTO user_tokens (id, user, kind, name, hash, created, expires)
		VALUES (?, ?, ?, ?, ?, ?, ?)`, t.ID, t.User, t.Kind, t.Name, t.Hash, created, expires)
}

// DeleteToken removes a user token.
func (s *Store) DeleteToken(ctx context.Context, id string) error {
	return s.execWrite(ctx, "delete token", `DELETE FROM user_tokens WHERE id = ?`, id)
}

// execWrite runs one statement in a write transaction.
func (s *Store) execWrite(ctx context.Context, what, q string, args ...any) error {
	return s.execWriteAnd(ctx, nil, what, q, args...)
}

// execWriteAnd is execWrite with writeAnd's after.
func (s *Store) execWriteAnd(ctx context.Context, after func(), what, q string, args ...any) error {
	err := s.writeAnd(ctx, func(w *wtx) error {
		_, err := w.exec(q, args...)
		return err
	}, after)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}
