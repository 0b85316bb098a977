package store

import "sync"

// maxCachedRows bounds a rowCache: past it the cache starts again empty.
// A hub holds a persona and a memory per talking device and a persona per
// home, so this is about 4,000 devices talking between two of the
// persona's or memory's writes before anything is read twice.
const maxCachedRows = 8192

// rowCache keeps rows that are read at every spoken turn (a device's
// persona, its home's, its memory) and written seldom (when a person
// changes a persona, when a conversation's memory is written). Read from
// SQLite, the three rows of a turn cost 24–34 µs and a read transaction
// each; from here, under 1 µs (BenchmarkTurnReads).
//
// The Store is the only writer of its file (its data directory is
// locked), and every write to a cached table goes through forget, so
// the cache is never behind the database:
//   - a write forgets its row after it commits;
//   - a read stores what it read only if no write of the table finished
//     while it was reading (seq unchanged), else the row it read may be
//     older than the write.
//
// Errors are not cached.
type rowCache[V any] struct {
	mu   sync.Mutex
	seq  uint64 // writes finished
	rows map[string]V
}

// get returns key's row, from the cache or by load.
func (c *rowCache[V]) get(key string, load func() (V, error)) (V, error) {
	c.mu.Lock()
	if v, ok := c.rows[key]; ok {
		c.mu.Unlock()
		return v, nil
	}
	seq := c.seq
	c.mu.Unlock()
	v, err := load()
	if err != nil {
		return v, err
	}
	c.mu.Lock()
	if c.seq == seq {
		if c.rows == nil || len(c.rows) >= maxCachedRows {
			c.rows = make(map[string]V)
		}
		c.rows[key] = v
	}
	c.mu.Unlock()
	return v, nil
}

// forget is called after each write to key's row, whether it succeeded
// or not (a write that failed may still have changed the file).
func (c *rowCache[V]) forget(key string) {
	c.mu.Lock()
	c.seq++
	delete(c.rows, key)
	c.mu.Unlock()
}
