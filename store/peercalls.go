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
	outcome, started, duration_ms)`, 11)

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
	args := make([]any, 0, 11*min(len(cs), rowsPerInsert))
	for len(cs) > 0 {
		n := rowsIn(len(cs))
		args = args[:0]
		for _, c := range cs[:n] {
			started, err := timeArg(c.Started)
			if err != nil {
				return fmt.Errorf("call to %s (node %s): %w", c.DeviceID, c.Node, err)
			}
			args = append(args, c.Node, c.ID, c.DeviceID, c.Kind, c.Tool, c.Caller, c.Arguments, c.Result, c.Outcome, started, c.DurationMs)
		}
		if _, err := w.exec(insertPeerCallsSQL[n], args...); err != nil {
			return fmt.Errorf("call to %s (node %s): %w", cs[0].DeviceID, cs[0].Node, err)
		}
		cs = cs[n:]
	}
	var newest int64
	if err := w.scan(`SELECT coalesce(max(rowid), 0) FROM peer_calls`, nil, &newest); err != nil {
		return err
	}
	return prune(w, `DELETE FROM peer_calls WHERE rowid <= ?`, newest, s.opts.MaxCalls)
}

// PeerCalls returns other nodes' call records, newest first, selected as
// Calls selects this node's.
func (s *Store) PeerCalls(ctx context.Context, f hub.CallFilter) ([]hub.CallRecord, error) {
	return s.listCalls(ctx, `SELECT node, id, device_id, kind, tool, caller, arguments, result, outcome, started, duration_ms FROM peer_calls`, "started", f)
}
