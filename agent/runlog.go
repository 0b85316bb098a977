package agent

import "sync"

// runLog is a bounded in-memory log of runs, newest kept.
type runLog struct {
	mu   sync.Mutex
	buf  []RunRecord
	next int // index of the oldest record once full
	id   int64
}

func newRunLog(n int) *runLog { return &runLog{buf: make([]RunRecord, 0, n)} }

func (l *runLog) add(r RunRecord) RunRecord {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.id++
	r.ID = l.id
	if r.Calls == nil {
		r.Calls = []CallRecord{}
	}
	if len(l.buf) < cap(l.buf) {
		l.buf = append(l.buf, r)
	} else {
		l.buf[l.next] = r
		l.next = (l.next + 1) % len(l.buf)
	}
	return r
}

// Runs returns up to limit recent runs, newest first (limit ≤ 0: all kept).
func (a *Agent) Runs(limit int) []RunRecord {
	l := a.runs
	l.mu.Lock()
	defer l.mu.Unlock()
	n := len(l.buf)
	if limit <= 0 || limit > n {
		limit = n
	}
	out := make([]RunRecord, 0, limit)
	for i := 0; i < limit; i++ {
		// newest is just before next (or at the end while filling)
		idx := (l.next - 1 - i + 2*n) % n
		if len(l.buf) < cap(l.buf) {
			idx = n - 1 - i
		}
		out = append(out, l.buf[idx])
	}
	return out
}
