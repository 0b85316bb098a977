package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/xiaozhi-hub/hub"
)

// ErrQueueFull is returned by Log when the writer has fallen so far behind
// that its queue is full.
var ErrQueueFull = errors.New("store write queue is full")

// Log queues call records and events for the bounded logs, in order,
// without waiting for the writer. Records queued by concurrent callers are
// committed together, in one multi-row insert per table; done, if not nil,
// runs in the writer goroutine with the outcome once the transaction has
// committed or failed (it must be quick: closing a channel, counting). When
// the queue is full or the store is closed, Log queues nothing, does not
// call done, and returns ErrQueueFull or ErrClosed: the caller counts the
// records as lost instead of waiting. This is the one queue of the hub's
// call records and events (the registry has none of its own).
//
// Events without call records are committed within eventLinger (50 ms):
// their transaction waits that long for others, so that events logged one
// at a time share a commit. A call record's caller may wait for it (done):
// it is committed at once, with the events gathered so far.
func (s *Store) Log(calls []hub.CallRecord, events []hub.Event, done func(error)) error {
	return s.queueLog(&logRows{calls: calls}, events, done, len(calls) == 0)
}

// LogCopied is Log for another node's records, copied from message seq of
// the cluster's history stream (stream names the stream and its
// creation). The store remembers, in the same transaction, the newest seq
// committed for stream: HistoryCopied.
func (s *Store) LogCopied(stream string, seq uint64, calls []hub.CallRecord, events []hub.Event, done func(error)) error {
	if stream == "" || seq == 0 {
		return fmt.Errorf("log copied records: no stream position (%q, %d)", stream, seq)
	}
	return s.queueLog(&logRows{calls: calls, stream: stream, seq: seq}, events, done, false)
}

// HistoryCopied returns the newest message of stream whose records are
// committed here (LogCopied), or 0.
func (s *Store) HistoryCopied(ctx context.Context, stream string) (uint64, error) {
	var seq uint64
	err := s.read.QueryRowContext(ctx, `SELECT seq FROM history_copied WHERE stream = ?`, stream).Scan(&seq)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("history copied: %w", err)
	}
	return seq, nil
}

func (s *Store) queueLog(rows *logRows, events []hub.Event, done func(error), lazy bool) error {
	var err error
	rows.events, err = encodeEvents(events) // off the single writer
	if err != nil {
		return err
	}
	o := &op{ctx: context.Background(), log: rows, finish: done, lazy: lazy}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return ErrClosed
	}
	select {
	case s.ops <- o:
		return nil
	default:
		return ErrQueueFull
	}
}

// logRows are the rows of one or more Log calls.
type logRows struct {
	calls  []hub.CallRecord
	events []eventRow
	// stream and seq: for copied records, the history message they came
	// from (LogCopied); the newest is committed with them.
	stream string
	seq    uint64
}

// eventRow is an event encoded for insertion.
type eventRow struct {
	typ, device, node, by string
	at, data              any // data is NULL when there is none
}

func encodeEvents(es []hub.Event) ([]eventRow, error) {
	rows := make([]eventRow, len(es))
	for i, e := range es {
		at, err := timeArg(e.Time)
		if err != nil {
			return nil, fmt.Errorf("add %s event: %w", e.Type, err)
		}
		rows[i] = eventRow{typ: e.Type, device: e.DeviceID, node: e.Node, by: e.By, at: at}
		if e.Data != nil {
			js, err := json.Marshal(e.Data)
			if err != nil {
				return nil, fmt.Errorf("add %s event: data: %w", e.Type, err)
			}
			if string(js) != "null" {
				rows[i].data = string(js)
			}
		}
	}
	return rows, nil
}

// runLogs writes the log rows of consecutive Log operations with as few
// statements as the rows allow.
func (s *Store) runLogs(w *wtx, ops []*op) error {
	var all logRows
	for _, o := range ops {
		all.calls = append(all.calls, o.log.calls...)
		all.events = append(all.events, o.log.events...)
		if o.log.seq > all.seq {
			all.stream, all.seq = o.log.stream, o.log.seq
		}
	}
	if all.seq > 0 {
		if _, err := w.exec(`DELETE FROM history_copied WHERE stream <> ?`, all.stream); err != nil {
			return err
		}
		if _, err := w.exec(`INSERT INTO history_copied (stream, seq) VALUES (?, ?)
			ON CONFLICT (stream) DO UPDATE SET seq = max(seq, excluded.seq)`, all.stream, all.seq); err != nil {
			return err
		}
	}
	own, peers := splitCalls(all.calls)
	if len(own) > 0 {
		id, err := insertCalls(w, own)
		if err != nil {
			return err
		}
		if err := prune(w, `DELETE FROM calls WHERE id <= ?`, id, s.opts.MaxCalls); err != nil {
			return err
		}
	}
	if len(peers) > 0 {
		if err := s.insertPeerCalls(w, peers); err != nil {
			return err
		}
	}
	if len(all.events) > 0 {
		return s.insertEvents(w, all.events)
	}
	return nil
}

// insertEvents inserts encoded events in order and applies the bounds.
func (s *Store) insertEvents(w *wtx, rows []eventRow) error {
	if _, err := s.eventCounts(w); err != nil { // before the new rows
		return err
	}
	args := make([]any, 0, 6*min(len(rows), rowsPerInsert))
	devices := make([]string, len(rows))
	for i := 0; i < len(rows); {
		n := rowsIn(len(rows) - i)
		args = args[:0]
		for j := i; j < i+n; j++ {
			args = append(args, rows[j].typ, rows[j].device, rows[j].at, rows[j].data, rows[j].node, rows[j].by)
			devices[j] = rows[j].device
		}
		if _, err := w.exec(insertEventsSQL[n], args...); err != nil {
			return err
		}
		i += n
	}
	return s.pruneEvents(w, devices)
}
