package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/xiaozhi-hub/hub"
)

// AddCall appends c and returns the record's id: c.ID if it is set (the
// registry numbers its records, see LastCallID), else a new one. Ids
// increase and are never reused. Each insert also deletes the records that
// fall out of the newest MaxCalls (one row in the steady state, found by
// primary key), so the bound is exact.
func (s *Store) AddCall(ctx context.Context, c hub.CallRecord) (int64, error) {
	var id int64
	err := s.write(ctx, func(w *wtx) (err error) {
		id, err = insertCall(w, c)
		if err != nil {
			return err
		}
		return prune(w, `DELETE FROM calls WHERE id <= ?`, id, s.opts.MaxCalls)
	})
	if err != nil {
		return 0, fmt.Errorf("add call to %s: %w", c.DeviceID, err)
	}
	return id, nil
}

// AddCalls appends records in order, in one transaction.
func (s *Store) AddCalls(ctx context.Context, cs []hub.CallRecord) error {
	if len(cs) == 0 {
		return nil
	}
	err := s.write(ctx, func(w *wtx) error {
		id, err := insertCalls(w, cs)
		if err != nil {
			return err
		}
		return prune(w, `DELETE FROM calls WHERE id <= ?`, id, s.opts.MaxCalls)
	})
	if err != nil {
		return fmt.Errorf("add %d calls: %w", len(cs), err)
	}
	return nil
}

// insertCalls inserts records in order, several per statement (one
// statement per row costs about twice as much), and returns the last id.
func insertCalls(w *wtx, cs []hub.CallRecord) (int64, error) {
	last, err := execCalls(w, insertCallsSQL, cs, func(c hub.CallRecord, started any) []any {
		return []any{idArg(c.ID), c.DeviceID, c.Kind, c.Tool, c.Caller, c.Arguments, c.Result, c.Outcome, started, c.DurationMs, c.By, c.User}
	})
	for _, c := range cs { // ids given by the registry may come out of order
		last = max(last, c.ID)
	}
	return last, err
}

// execCalls inserts call records with stmts (by rows per statement), each
// record's columns given by row; it returns the largest rowid reported.
func execCalls(w *wtx, stmts map[int]string, cs []hub.CallRecord, row func(c hub.CallRecord, started any) []any) (int64, error) {
	var last int64
	args := make([]any, 0, 13*min(len(cs), rowsPerInsert))
	for len(cs) > 0 {
		n := rowsIn(len(cs))
		args = args[:0]
		for _, c := range cs[:n] {
			started, err := timeArg(c.Started)
			if err != nil {
				return 0, fmt.Errorf("call to %s: %w", c.DeviceID, err)
			}
			args = append(args, row(c, started)...)
		}
		res, err := w.exec(stmts[n], args...)
		if err != nil {
			return 0, fmt.Errorf("call to %s: %w", cs[0].DeviceID, err)
		}
		id, err := res.LastInsertId()
		if err != nil {
			return 0, err
		}
		last = max(last, id)
		cs = cs[n:]
	}
	return last, nil
}

// Multi-row inserts come in a few sizes, so that few statements are prepared.
const rowsPerInsert = 32

var rowSizes = []int{rowsPerInsert, 8, 1}

// rowsIn returns how many of n remaining rows the next statement inserts.
func rowsIn(n int) int {
	for _, k := range rowSizes {
		if n >= k {
			return k
		}
	}
	return n
}

// multiInsert returns "INSERT … VALUES (?,…),(?,…)…" statements by row count.
func multiInsert(head string, cols int) map[int]string {
	row := "(" + strings.TrimSuffix(strings.Repeat("?, ", cols), ", ") + ")"
	out := map[int]string{}
	for _, k := range rowSizes {
		out[k] = head + " VALUES " + strings.TrimSuffix(strings.Repeat(row+", ", k), ", ")
	}
	return out
}

var (
	insertCallsSQL = multiInsert(`INSERT INTO calls (id, device_id, kind, tool, caller, arguments, result,
		outcome, started, duration_ms, by_actor, by_user)`, 12)
	insertEventsSQL = multiInsert(`INSERT INTO events (type, device_id, time, data, node, by_actor)`, 6)
)

func insertCall(w *wtx, c hub.CallRecord) (int64, error) {
	started, err := timeArg(c.Started)
	if err != nil {
		return 0, err
	}
	res, err := w.exec(insertCallsSQL[1], idArg(c.ID), c.DeviceID, c.Kind, c.Tool, c.Caller, c.Arguments, c.Result, c.Outcome, started, c.DurationMs, c.By, c.User)
	if err != nil {
		return 0, err
	}
	return res.LastInsertId()
}

// idArg stores an unset id as NULL, which SQLite replaces with a new one.
func idArg(id int64) any {
	if id <= 0 {
		return nil
	}
	return id
}

// LastCallID returns the largest call id ever given out (0 for none), also
// counting records since pruned or deleted, so that numbering on from it
// never reuses an id.
func (s *Store) LastCallID(ctx context.Context) (int64, error) {
	var id int64
	err := s.read.QueryRowContext(ctx, `SELECT coalesce(max(seq), 0) FROM sqlite_sequence WHERE name = 'calls'`).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("last call id: %w", err)
	}
	return id, nil
}

// prune deletes the rows older than the newest keep, given the newest id.
func prune(w *wtx, query string, newest int64, keep int) error {
	if cut := newest - int64(keep); cut > 0 {
		_, err := w.exec(query, cut)
		return err
	}
	return nil
}

// Calls returns call records newest first, for one device if f.DeviceID is
// set; at most f.Limit (default 100, at most 1000).
func (s *Store) Calls(ctx context.Context, f hub.CallFilter) ([]hub.CallRecord, error) {
	return s.listCalls(ctx, `SELECT '', id, device_id, kind, tool, caller, arguments, result, outcome, started, duration_ms, by_actor, by_user FROM calls`, "id", f)
}

// listCalls runs a query of calls (with its node first) for f, newest
// (by the order column) first.
func (s *Store) listCalls(ctx context.Context, q, order string, f hub.CallFilter) ([]hub.CallRecord, error) {
	args := []any{}
	var where []string
	if f.DeviceID != "" {
		where = append(where, `device_id = ?`)
		args = append(args, f.DeviceID)
	}
	if v := f.Seen; v != nil {
		all, _ := json.Marshal(v.All)
		own, _ := json.Marshal(v.Own)
		where = append(where, `(device_id IN (SELECT value FROM json_each(?))
			OR (by_user = ? AND by_user != '' AND device_id IN (SELECT value FROM json_each(?))))`)
		args = append(args, string(all), v.User, string(own))
	}
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, ` AND `)
	}
	q += ` ORDER BY ` + order + ` DESC LIMIT ?`
	args = append(args, limit(f.Limit))
	rows, err := s.read.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list calls: %w", err)
	}
	defer rows.Close()
	calls := []hub.CallRecord{}
	for rows.Next() {
		var c hub.CallRecord
		var started sql.NullInt64
		if err := rows.Scan(&c.Node, &c.ID, &c.DeviceID, &c.Kind, &c.Tool, &c.Caller, &c.Arguments,
			&c.Result, &c.Outcome, &started, &c.DurationMs, &c.By, &c.User); err != nil {
			return nil, fmt.Errorf("list calls: %w", err)
		}
		c.Started = timeCol(started)
		calls = append(calls, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list calls: %w", err)
	}
	return calls, nil
}

// AddEvent appends e, keeping the newest MaxEvents, and the newest
// MaxDeviceEvents of each device (see eventcap.go). e.Data is stored as
// JSON; Events returns it as json.RawMessage, which encodes identically.
func (s *Store) AddEvent(ctx context.Context, e hub.Event) error {
	return s.AddEvents(ctx, []hub.Event{e})
}

// AddEvents appends events in order, in one transaction.
func (s *Store) AddEvents(ctx context.Context, es []hub.Event) error {
	if len(es) == 0 {
		return nil
	}
	rows, err := encodeEvents(es) // off the single writer
	if err != nil {
		return err
	}
	err = s.write(ctx, func(w *wtx) error { return s.insertEvents(w, rows) })
	if err != nil {
		if len(es) == 1 {
			return fmt.Errorf("add %s event: %w", es[0].Type, err)
		}
		return fmt.Errorf("add %d events: %w", len(es), err)
	}
	return nil
}

// Events returns the newest events first, for one device if deviceID is
// set; at most limit (default 100, at most 1000).
func (s *Store) Events(ctx context.Context, deviceID string, n int) ([]hub.Event, error) {
	q := `SELECT type, device_id, time, data, node, by_actor FROM events`
	args := []any{}
	if deviceID != "" {
		q += ` WHERE device_id = ?`
		args = append(args, deviceID)
	}
	q += ` ORDER BY id DESC LIMIT ?`
	args = append(args, limit(n))
	rows, err := s.read.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list events: %w", err)
	}
	defer rows.Close()
	events := []hub.Event{}
	for rows.Next() {
		var e hub.Event
		var at sql.NullInt64
		var data sql.NullString
		if err := rows.Scan(&e.Type, &e.DeviceID, &at, &data, &e.Node, &e.By); err != nil {
			return nil, fmt.Errorf("list events: %w", err)
		}
		e.Time = timeCol(at)
		if data.Valid {
			e.Data = json.RawMessage(data.String)
		}
		events = append(events, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list events: %w", err)
	}
	return events, nil
}
