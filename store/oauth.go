package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/xiaozhi-hub/hub"
)

// LoadOAuth returns every registered OAuth client and every grant.
func (s *Store) LoadOAuth(ctx context.Context) ([]hub.OAuthClient, []hub.OAuthGrant, error) {
	rows, err := s.read.QueryContext(ctx, `SELECT client_id, name, redirect_uris, auth_method, secret_hash, registered, address
		FROM oauth_clients ORDER BY registered`)
	if err != nil {
		return nil, nil, fmt.Errorf("load oauth clients: %w", err)
	}
	defer rows.Close()
	var clients []hub.OAuthClient
	for rows.Next() {
		var c hub.OAuthClient
		var uris string
		var reg sql.NullInt64
		if err := rows.Scan(&c.ID, &c.Name, &uris, &c.AuthMethod, &c.SecretHash, &reg, &c.Address); err != nil {
			return nil, nil, fmt.Errorf("load oauth clients: %w", err)
		}
		if err := json.Unmarshal([]byte(uris), &c.RedirectURIs); err != nil {
			return nil, nil, fmt.Errorf("load oauth client %s: redirect URIs: %w", c.ID, err)
		}
		c.Registered = timeCol(reg)
		clients = append(clients, c)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("load oauth clients: %w", err)
	}
	grows, err := s.read.QueryContext(ctx, `SELECT grant_id, client_id, approved, access_hash, access_expires,
		refresh_hash, refresh_expires, last_used, rotated, user FROM oauth_grants ORDER BY approved`)
	if err != nil {
		return nil, nil, fmt.Errorf("load oauth grants: %w", err)
	}
	defer grows.Close()
	var grants []hub.OAuthGrant
	for grows.Next() {
		var g hub.OAuthGrant
		var approved, aexp, rexp, used sql.NullInt64
		var rotated []byte
		if err := grows.Scan(&g.ID, &g.ClientID, &approved, &g.AccessHash, &aexp, &g.RefreshHash, &rexp, &used, &rotated, &g.User); err != nil {
			return nil, nil, fmt.Errorf("load oauth grants: %w", err)
		}
		for len(rotated) >= sha256.Size {
			g.Rotated = append(g.Rotated, rotated[:sha256.Size:sha256.Size])
			rotated = rotated[sha256.Size:]
		}
		g.Approved, g.AccessExpires, g.RefreshExpires, g.LastUsed = timeCol(approved), timeCol(aexp), timeCol(rexp), timeCol(used)
		grants = append(grants, g)
	}
	if err := grows.Err(); err != nil {
		return nil, nil, fmt.Errorf("load oauth grants: %w", err)
	}
	return clients, grants, nil
}

// SaveOAuthClient creates or replaces a client registration.
func (s *Store) SaveOAuthClient(ctx context.Context, c hub.OAuthClient) error {
	if c.ID == "" {
		return hub.Errorf(hub.EINVALID, "oauth client id is empty")
	}
	uris, err := json.Marshal(c.RedirectURIs)
	if err != nil {
		return fmt.Errorf("save oauth client %s: %w", c.ID, err)
	}
	reg, err := timeArg(c.Registered)
	if err != nil {
		return fmt.Errorf("save oauth client %s: %w", c.ID, err)
	}
	err = s.write(ctx, func(w *wtx) error {
		_, err := w.exec(`INSERT INTO oauth_clients (client_id, name, redirect_uris, auth_method, secret_hash, registered, address)
			VALUES (?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (client_id) DO UPDATE SET name = excluded.name, redirect_uris = excluded.redirect_uris,
				auth_method = excluded.auth_method, secret_hash = excluded.secret_hash`,
			c.ID, c.Name, string(uris), c.AuthMethod, c.SecretHash, reg, c.Address)
		return err
	})
	if err != nil {
		return fmt.Errorf("save oauth client %s: %w", c.ID, err)
	}
	return nil
}

// DeleteOAuthClient removes a client and all its grants.
func (s *Store) DeleteOAuthClient(ctx context.Context, clientID string) error {
	err := s.write(ctx, func(w *wtx) error {
		if _, err := w.exec(`DELETE FROM oauth_grants WHERE client_id = ?`, clientID); err != nil {
			return err
		}
		_, err := w.exec(`DELETE FROM oauth_clients WHERE client_id = ?`, clientID)
		return err
	})
	if err != nil {
		return fmt.Errorf("delete oauth client %s: %w", clientID, err)
	}
	return nil
}

// SaveOAuthGrant creates or replaces a grant (its client must exist).
func (s *Store) SaveOAuthGrant(ctx context.Context, g hub.OAuthGrant) error {
	var args []any
	for _, t := range []time.Time{g.Approved, g.AccessExpires, g.RefreshExpires, g.LastUsed} {
		a, err := timeArg(t)
		if err != nil {
			return fmt.Errorf("save oauth grant %s: %w", g.ID, err)
		}
		args = append(args, a)
	}
	var rotated []byte // the hashes one after another
	for _, h := range g.Rotated {
		if len(h) != sha256.Size {
			return hub.Errorf(hub.EINVALID, "save oauth grant %s: a rotated refresh token hash has %d bytes, not %d", g.ID, len(h), sha256.Size)
		}
		rotated = append(rotated, h...)
	}
	err := s.write(ctx, func(w *wtx) error {
		_, err := w.exec(`INSERT INTO oauth_grants (grant_id, client_id, approved, access_hash, access_expires,
				refresh_hash, refresh_expires, last_used, rotated, user) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (grant_id) DO UPDATE SET access_hash = excluded.access_hash,
				access_expires = excluded.access_expires, refresh_hash = excluded.refresh_hash,
				refresh_expires = excluded.refresh_expires, last_used = excluded.last_used, rotated = excluded.rotated`,
			g.ID, g.ClientID, args[0], g.AccessHash, args[1], g.RefreshHash, args[2], args[3], rotated, g.User)
		return err
	})
	if err != nil {
		return fmt.Errorf("save oauth grant %s: %w", g.ID, err)
	}
	return nil
}

// DeleteOAuthGrant removes one grant; an unknown one is not an error.
func (s *Store) DeleteOAuthGrant(ctx context.Context, grantID string) error {
	err := s.write(ctx, func(w *wtx) error {
		_, err := w.exec(`DELETE FROM oauth_grants WHERE grant_id = ?`, grantID)
		return err
	})
	if err != nil {
		return fmt.Errorf("delete oauth grant %s: %w", grantID, err)
	}
	return nil
}
