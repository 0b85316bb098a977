package store

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Migrations are SQL files named NNN_description.sql, applied in order of
// NNN, each in its own transaction, and recorded in schema_migrations. A
// released migration is never edited; changes go into a new file.
//
//go:embed migrations/*.sql
var migrationFS embed.FS

// ErrNewerSchema is returned by Open for a database that records migrations
// this build does not know: it was written by a newer xiaozhi-hub. The
// database is left untouched.
var ErrNewerSchema = errors.New("database schema is newer than this xiaozhi-hub")

type migration struct {
	version int
	name    string // file name
	sql     string
}

func loadMigrations() ([]migration, error) {
	names, err := fs.Glob(migrationFS, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var ms []migration
	seen := map[int]string{}
	for _, p := range names {
		name := path.Base(p)
		num, _, ok := strings.Cut(name, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %s: name must start with a positive number and '_'", name)
		}
		if other, dup := seen[v]; dup {
			return nil, fmt.Errorf("migrations %s and %s share number %d", other, name, v)
		}
		seen[v] = name
		buf, err := fs.ReadFile(migrationFS, p)
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{version: v, name: name, sql: string(buf)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	return ms, nil
}

// migrate brings the database on conn up to date. It refuses, before
// changing anything, a database that records a migration this build does
// not have.
func migrate(ctx context.Context, conn *sql.Conn) error {
	ms, err := loadMigrations()
	if err != nil {
		return fmt.Errorf("load migrations: %w", err)
	}
	if _, err := conn.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER PRIMARY KEY,
		name       TEXT NOT NULL,
		applied_at TEXT NOT NULL
	)`); err != nil {
		return fmt.Errorf("create schema_migrations: %w", err)
	}
	if err := checkApplied(ctx, conn, ms); err != nil {
		return err
	}
	for _, m := range ms {
		if err := migrateOne(ctx, conn, m); err != nil {
			return fmt.Errorf("migration %s: %w", m.name, err)
		}
	}
	return nil
}

// checkApplied compares the recorded migrations with the known ones.
func checkApplied(ctx context.Context, conn *sql.Conn, ms []migration) error {
	known := make(map[int]string, len(ms))
	for _, m := range ms {
		known[m.version] = m.name
	}
	rows, err := conn.QueryContext(ctx, `SELECT version, name FROM schema_migrations ORDER BY version`)
	if err != nil {
		return fmt.Errorf("read schema_migrations: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var v int
		var name string
		if err := rows.Scan(&v, &name); err != nil {
			return fmt.Errorf("read schema_migrations: %w", err)
		}
		switch mine, ok := known[v]; {
		case !ok:
			return fmt.Errorf("%w: the database has migration %d (%s), this build knows up to %d; "+
				"run a newer xiaozhi-hub or use another data directory", ErrNewerSchema, v, name, ms[len(ms)-1].version)
		case mine != name:
			return fmt.Errorf("%w: the database has migration %d as %s, this build as %s",
				ErrNewerSchema, v, name, mine)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read schema_migrations: %w", err)
	}
	return nil
}

// migrateOne applies m unless it is recorded, in one IMMEDIATE transaction so
// that two processes opening the same file do not both apply it.
func migrateOne(ctx context.Context, conn *sql.Conn, m migration) error {
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM schema_migrations WHERE version = ?`, m.version).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		return nil
	}
	if _, err := tx.ExecContext(ctx, m.sql); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
		m.version, m.name, time.Now().UTC().Format(time.RFC3339)); err != nil {
		return err
	}
	return tx.Commit()
}
