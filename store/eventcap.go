package store

import (
	"context"
	"fmt"
)

// Events are kept within two bounds: MaxDeviceEvents per device, so that a
// chatty device only ever pushes out its own history, and MaxEvents in all.
// Both are exact and cheap: the writer keeps the number of rows per device
// in memory and, when a bound is exceeded, deletes just the excess oldest
// rows (found by index, RETURNING which devices lost them).

// eventCounts are the rows of the events table, in total and per device.
// Only the writer goroutine uses them.
type eventCounts struct {
	total    int
	byDevice map[string]int
}

// eventCounts returns the counts, loading them on first use and after
// anything that may have made them wrong (a rolled-back transaction,
// DeleteDevice): see forgetEventCounts.
func (s *Store) eventCounts(w *wtx) (*eventCounts, error) {
	if s.evCounts != nil {
		return s.evCounts, nil
	}
	st, err := s.stmt(`SELECT device_id, count(*) FROM events GROUP BY device_id`)
	if err != nil {
		return nil, err
	}
	rows, err := st.QueryContext(context.Background())
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	c := &eventCounts{byDevice: map[string]int{}}
	for rows.Next() {
		var id string
		var n int
		if err := rows.Scan(&id, &n); err != nil {
			return nil, err
		}
		c.byDevice[id] = n
		c.total += n
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	s.evCounts = c
	return c, nil
}

// forgetEventCounts makes the next write count the rows again.
func (s *Store) forgetEventCounts() { s.evCounts = nil }

func (c *eventCounts) remove(device string, n int) {
	c.total -= n
	if c.byDevice[device] -= n; c.byDevice[device] <= 0 {
		delete(c.byDevice, device)
	}
}

// pruneEvents counts the devices' new rows (one entry per event; the
// counts were loaded before they were inserted) and deletes the oldest rows
// beyond the per-device and total bounds.
func (s *Store) pruneEvents(w *wtx, devices []string) error {
	c, err := s.eventCounts(w)
	if err != nil {
		return err
	}
	for _, d := range devices {
		c.byDevice[d]++
		c.total++
	}
	for _, d := range devices {
		excess := c.byDevice[d] - s.opts.MaxDeviceEvents
		if excess <= 0 {
			continue
		}
		res, err := w.exec(`DELETE FROM events WHERE id IN
			(SELECT id FROM events WHERE device_id = ? ORDER BY id LIMIT ?)`, d, excess)
		if err != nil {
			return fmt.Errorf("prune events of %s: %w", d, err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		c.remove(d, int(n))
	}
	excess := c.total - s.opts.MaxEvents
	if excess <= 0 {
		return nil
	}
	st, err := s.stmt(`DELETE FROM events WHERE id IN
		(SELECT id FROM events ORDER BY id LIMIT ?) RETURNING device_id`)
	if err != nil {
		return err
	}
	rows, err := st.QueryContext(context.Background(), excess)
	if err != nil {
		return fmt.Errorf("prune events: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var d string
		if err := rows.Scan(&d); err != nil {
			return err
		}
		c.remove(d, 1)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("prune events: %w", err)
	}
	return nil
}
