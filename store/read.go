package store

import (
	"context"
	"database/sql"
)

// readRow runs a query of the read pool that returns at most one row, as
// a statement prepared once for the Store's life: the point reads made on
// a hot path (a device's persona and memory at each spoken turn, its trust
// record at each OTA check) would otherwise spend more time having SQLite
// parse the query than running it. query must be a constant, not built
// per call: each distinct query keeps a statement until Close.
func (s *Store) readRow(ctx context.Context, query string, args ...any) *sql.Row {
	if st, ok := s.readStmts.Load(query); ok {
		return st.(*sql.Stmt).QueryRowContext(ctx, args...)
	}
	st, err := s.read.PrepareContext(ctx, query)
	if err != nil {
		return s.read.QueryRowContext(ctx, query, args...) // which reports the error
	}
	if prev, loaded := s.readStmts.LoadOrStore(query, st); loaded {
		st.Close()
		st = prev.(*sql.Stmt)
	}
	return st.QueryRowContext(ctx, args...)
}

// closeReadStmts closes the statements readRow prepared.
func (s *Store) closeReadStmts() []error {
	var errs []error
	s.readStmts.Range(func(k, v any) bool {
		errs = append(errs, v.(*sql.Stmt).Close())
		s.readStmts.Delete(k)
		return true
	})
	return errs
}
