package agent

import (
	"sync"

	"github.com/xiaozhi-hub/hub"
)

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

// Runs returns up to limit recent runs that p may see, newest first
// (limit ≤ 0: all kept). The admin (or nil, the hub itself) sees every
// run; a person, the runs they asked for.
func (a *Agent) Runs(p *hub.Principal, limit int) []RunRecord {
	l := a.runs
	l.mu.Lock()
	defer l.mu.Unlock()
	n := len(l.buf)
	if limit <= 0 || limit > n {
		limit = n
	}
	all := p == nil || p.Admin
	out := make([]RunRecord, 0, limit)
	for i := 0; i < n && len(out) < limit; i++ {
		// newest is just before next (or at the end while filling)
		idx := (l.next - 1 - i + 2*n) % n
		if len(l.buf) < cap(l.buf) {
			idx = n - 1 - i
		}
		if r := l.buf[idx]; all || (r.User != "" && r.User == p.User) {
			out = append(out, r)
		}
	}
	return out
}
