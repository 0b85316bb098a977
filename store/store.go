// Package store is the durable cache behind the registry: an implementation
// of registry.Store on SQLite (modernc.org/sqlite, pure Go, no cgo).
//
// One SQLite file holds devices, their tool lists (deduplicated by content
// hash), legacy IoT things, and bounded logs of calls and events. All writes
// go through one writer goroutine that commits whatever is queued in a
// single transaction (group commit); reads use a separate pool of
// connections and never wait for writers (WAL).
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/xiaozhi-hub/hub"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// ErrClosed is returned by writes made after Close.
var ErrClosed = errors.New("store is closed")

// Options tune a Store. Zero values select the defaults.
type Options struct {
	// MaxCalls is how many call records are kept (newest first); default 10000.
	MaxCalls int
	// MaxEvents is how many events are kept (newest first); default 20000.
	MaxEvents int
	// MaxDeviceEvents is how many events of one device are kept (newest
	// first); default 1000. A device that says a lot pushes out its own
	// history, not that of the others.
	MaxDeviceEvents int

	// beforeBatch, if set, runs in the writer goroutine after it has taken the
	// first operation of a batch and before it drains the rest (tests only).
	beforeBatch func()
	// eventLinger: eventLinger unless a test sets another.
	eventLinger time.Duration
}

func (o Options) withDefaults() Options {
	if o.MaxCalls <= 0 {
		o.MaxCalls = 10000
	}
	if o.MaxEvents <= 0 {
		o.MaxEvents = 20000
	}
	if o.MaxDeviceEvents <= 0 {
		o.MaxDeviceEvents = 1000
	}
	if o.eventLinger <= 0 {
		o.eventLinger = eventLinger
	}
	return o
}

// Store is a registry.Store on one SQLite file. It is safe for concurrent use.
type Store struct {
	opts  Options
	path  string
	wdb   *sql.DB   // the connections of the writer and of the checkpointer
	conn  *sql.Conn // the write connection; after Open only the writer uses it
	ckpt  *sql.Conn // the checkpointer's connection; nil for ":memory:"
	read  *sql.DB   // pool of query_only connections
	stmts map[string]*sql.Stmt
	// readStmts are the read pool's prepared point reads (read.go), by query.
	readStmts sync.Map
	// personas and memories are read at every spoken turn (cache.go).
	personas rowCache[hub.Persona]
	memories rowCache[hub.Memory]
	// evCounts are the rows of the events table (eventcap.go); writer only.
	evCounts *eventCounts

	mu     sync.RWMutex // held for reading while sending on ops
	closed bool
	ops    chan *op
	done   chan struct{} // closed when the writer goroutine has returned

	closeOnce sync.Once
	closeErr  error

	commits  atomic.Int64
	ckptKick chan struct{}
	ckptStop chan struct{}
	ckptDone chan struct{} // closed when the checkpointer has returned

	batches, retries, largest atomic.Int64
	lastFailure               atomic.Pointer[writeFailure] // see Health
}

// Open opens (creating if needed) the database file at path, applies any
// pending migrations and starts the writer goroutine. The directory must
// exist. The database and its -wal and -shm files are readable by their
// owner only (mode 0600). path may be ":memory:" for a private in-memory
// database (tests, demos); it is lost on Close.
func Open(ctx context.Context, path string, opts Options) (*Store, error) {
	if path == "" {
		return nil, hub.Errorf(hub.EINVALID, "open store: database path is empty")
	}
	if strings.ContainsRune(path, '?') {
		return nil, hub.Errorf(hub.EINVALID, "open store: database path %q must not contain '?'", path)
	}
	s := &Store{
		opts:  opts.withDefaults(),
		path:  path,
		stmts: make(map[string]*sql.Stmt),
		ops:   make(chan *op, maxQueue),
		done:  make(chan struct{}),

		ckptKick: make(chan struct{}, 1),
		ckptStop: make(chan struct{}),
		ckptDone: make(chan struct{}),
	}
	if err := s.open(ctx); err != nil {
		s.closeDBs()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	go s.run()
	if s.ckpt != nil {
		go s.checkpointer(s.ckpt)
	} else {
		close(s.ckptDone)
	}
	return s, nil
}

func (s *Store) open(ctx context.Context) error {
	if s.path != ":memory:" {
		if err := restrictFiles(s.path); err != nil {
			return err
		}
	}
	wdsn, rdsn := dsn(s.path)
	var err error
	if s.wdb, err = sql.Open("sqlite", wdsn); err != nil {
		return err
	}
	s.wdb.SetMaxOpenConns(2)
	s.wdb.SetMaxIdleConns(2)
	s.wdb.SetConnMaxLifetime(0)
	s.wdb.SetConnMaxIdleTime(0)
	if s.conn, err = s.wdb.Conn(ctx); err != nil {
		return err
	}
	if err := migrate(ctx, s.conn); err != nil {
		return err
	}
	if s.read, err = sql.Open("sqlite", rdsn); err != nil {
		return err
	}
	n := max(4, runtime.GOMAXPROCS(0))
	s.read.SetMaxOpenConns(n)
	s.read.SetMaxIdleConns(n)
	if err := s.read.PingContext(ctx); err != nil {
		return err
	}
	if s.path == ":memory:" {
		return nil // no WAL, nothing to checkpoint
	}
	s.ckpt, err = s.wdb.Conn(ctx)
	return err
}

// dsn returns the data source names of the write connection and of the read
// pool.
//
// Durability: in WAL mode with synchronous=NORMAL a transaction is committed
// once its frames are written to the -wal file, which happens before COMMIT
// returns. The data then sits in the operating system's page cache, so a
// committed write survives kill -9 (or a panic) of this process; only a
// power loss or kernel crash can lose the most recent transactions (never
// corrupting the database). fsync happens at checkpoints (checkpoint.go).
func dsn(path string) (write, read string) {
	if path == ":memory:" {
		// memdb VFS: one in-memory database shared by this Store's
		// connections, with real locking (so busy_timeout applies).
		name := fmt.Sprintf("file:/xiaozhi-hub-%d-%d?vfs=memdb", time.Now().UnixNano(), memSeq.Add(1))
		v := url.Values{}
		v.Add("_pragma", "busy_timeout(10000)")
		v.Add("_pragma", "foreign_keys(ON)")
		w := name + "&" + v.Encode() + "&_txlock=immediate"
		return w, w
	}
	common := url.Values{}
	common.Add("_pragma", "busy_timeout(10000)")
	common.Add("_pragma", "foreign_keys(ON)")
	common.Add("_pragma", "synchronous(NORMAL)")
	w := url.Values{}
	w.Add("_pragma", "journal_mode(WAL)")
	w.Add("_pragma", "journal_size_limit(67108864)")
	w.Add("_pragma", "wal_autocheckpoint(0)") // see checkpoint.go
	w.Set("_txlock", "immediate")
	r := url.Values{}
	r.Add("_pragma", "query_only(ON)")
	return path + "?" + common.Encode() + "&" + w.Encode(),
		path + "?" + common.Encode() + "&" + r.Encode()
}

var memSeq atomic.Int64

// Close stops accepting writes, waits for the queued ones to commit, and
// closes the database. It is safe to call more than once.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		close(s.ops)
		s.mu.Unlock()
		<-s.done
		close(s.ckptStop)
		<-s.ckptDone
		s.closeErr = s.closeDBs()
	})
	return s.closeErr
}

// closeDBs closes the read pool first so that the write connection is the
// last one and checkpoints the WAL into the main file.
func (s *Store) closeDBs() error {
	var errs []error
	if s.read != nil {
		errs = append(errs, s.closeReadStmts()...)
		errs = append(errs, s.read.Close())
	}
	for _, st := range s.stmts {
		errs = append(errs, st.Close())
	}
	if s.conn != nil {
		errs = append(errs, s.conn.Close())
	}
	if s.wdb != nil {
		errs = append(errs, s.wdb.Close())
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close store %s: %w", s.path, err)
	}
	return nil
}

// Times are stored as UTC unix nanoseconds, NULL for the zero time, so they
// round-trip exactly (as UTC, without monotonic reading).
var (
	minTime = time.Unix(0, math.MinInt64)
	maxTime = time.Unix(0, math.MaxInt64)
)

func timeArg(t time.Time) (any, error) {
	if t.IsZero() {
		return nil, nil
	}
	if t.Before(minTime) || t.After(maxTime) {
		return nil, hub.Errorf(hub.EINVALID, "time %s is out of range (years 1678 to 2262)", t)
	}
	return t.UnixNano(), nil
}

func timeCol(v sql.NullInt64) time.Time {
	if !v.Valid {
		return time.Time{}
	}
	return time.Unix(0, v.Int64).UTC()
}

// rawArg stores an absent raw JSON value as NULL.
func rawArg(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	return string(b)
}

func rawCol(v sql.NullString) []byte {
	if !v.Valid {
		return nil
	}
	return []byte(v.String)
}

// limit applies the default (100) and maximum (1000) of list queries.
func limit(n int) int {
	switch {
	case n <= 0:
		return 100
	case n > 1000:
		return 1000
	}
	return n
}

func checkID(id string) error {
	if id == "" {
		return hub.Errorf(hub.EINVALID, "device id is empty")
	}
	return nil
}

// Ping checks that the database answers a read, for health checks.
func (s *Store) Ping(ctx context.Context) error {
	var one int
	if err := s.read.QueryRowContext(ctx, `SELECT 1`).Scan(&one); err != nil {
		return fmt.Errorf("database: %w", err)
	}
	return nil
}
