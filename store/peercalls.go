package store

import (
	"context"
	"fmt"

	"github.com/xiaozhi-hub/hub"
)

// Other nodes' call records, in a cluster: Log stores a record that names
// its node (hub.CallRecord.Node) in peer_calls, once per node and id (a
// record delivered twice is kept once), and keeps the newest MaxCalls.

var insertPeerCallsSQL = multiInsert(`INSERT OR IGNORE INTO peer_calls (node, id, device_id, kind, tool, caller, arguments, result,
	outcome, started, duration_ms, by_actor, by_user)`, 13)

// splitCalls separates this node's records from other nodes'.
func splitCalls(cs []hub.CallRecord) (own, peers []hub.CallRecord) {
	for _, c := range cs {
		if c.Node == "" {
			own = append(own, c)
		} else {
			peers = append(peers, c)
		}
	}
	return own, peers
}

func (s *Store) insertPeerCalls(w *wtx, cs []hub.CallRecord) error {
	_, err := execCalls(w, insertPeerCallsSQL, cs, func(c hub.CallRecord, started any) []any {
		return []any{c.Node, c.ID, c.DeviceID, c.Kind, c.Tool, c.Caller, c.Arguments, c.Result, c.Outcome, started, c.DurationMs, c.By, c.User}
	})
	if err != nil {
		return fmt.Errorf("another node's call: %w", err)
	}
	// Not LastInsertId: a row ignored as a repeat reports none of its own.
	var newest int64
	if err := w.scan(`SELECT coalesce(max(rowid), 0) FROM peer_calls`, nil, &newest); err != nil {
		return err
	}
	return prune(w, `DELETE FROM peer_calls WHERE rowid <= ?`, newest, s.opts.MaxCalls)
}

// PeerCalls returns other nodes' call records, newest first, selected as
// Calls selects this node's.
func (s *Store) PeerCalls(ctx context.Context, f hub.CallFilter) ([]hub.CallRecord, error) {
	return s.listCalls(ctx, `SELECT node, id, device_id, kind, tool, caller, arguments, result, outcome, started, duration_ms, by_actor, by_user FROM peer_calls`, "started", f)
}
