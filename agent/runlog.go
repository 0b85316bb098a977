package agent

import (
	"sync"
	"time"
)

// RunRecord is what one run did. The registry separately records each
// device call (with Caller "agent") in the hub's call history.
type RunRecord struct {
	ID       int64     `json:"id"`
	Session  string    `json:"session"`
	Input    string    `json:"input"`
	Provider string    `json:"provider"`
	Model    string    `json:"model"`
	Started  time.Time `json:"started"`
	// DurationMs is the whole run; LLMMs the part spent waiting for the model.
	DurationMs float64      `json:"durationMs"`
	LLMMs      float64      `json:"llmMs"`
	Steps      int          `json:"steps"` // model calls
	Outcome    string       `json:"outcome"`
	Error      string       `json:"error,omitempty"`
	Text       string       `json:"text"`
	Calls      []CallRecord `json:"calls"`
	Usage      Usage        `json:"usage"`
}

// CallRecord is one tool call of a run.
type CallRecord struct {
	Step       int     `json:"step"`
	ID         string  `json:"id"`
	Name       string  `json:"name"`
	DeviceID   string  `json:"deviceId,omitempty"`
	Target     string  `json:"target,omitempty"`
	Arguments  string  `json:"arguments"` // truncated
	Result     string  `json:"result"`    // truncated
	Outcome    string  `json:"outcome"`   // "ok" or an error code
	DurationMs float64 `json:"durationMs"`
}

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
