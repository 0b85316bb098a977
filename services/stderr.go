package services

import (
	"bytes"
	"log/slog"

	"golang.org/x/time/rate"

	"github.com/xiaozhi-hub/hub"
)

// Bounds on a stdio server's stderr in the hub's log: each line cut to
// maxStderrLine bytes, 5 lines a second after a burst of 50; the lines
// past that are counted and the count logged with the next line logged.
const (
	maxStderrLine  = 512
	stderrPerSec   = 5
	stderrBurst    = 50
	maxStderrBytes = 4 << 10 // a "line" without a newline is cut here
)

// stderrLog writes a stdio server's stderr to the hub's log, a line at a
// time, bounded. Only exec's copying goroutine writes to it.
type stderrLog struct {
	log     *slog.Logger
	lim     *rate.Limiter
	buf     []byte
	dropped int
}

func newStderrLog(log *slog.Logger) *stderrLog {
	return &stderrLog{log: log, lim: rate.NewLimiter(stderrPerSec, stderrBurst)}
}

func (s *stderrLog) Write(p []byte) (int, error) {
	s.buf = append(s.buf, p...)
	for {
		i := bytes.IndexByte(s.buf, '\n')
		if i < 0 {
			if len(s.buf) >= maxStderrBytes {
				s.line(s.buf)
				s.buf = s.buf[:0]
			}
			return len(p), nil
		}
		s.line(s.buf[:i])
		s.buf = s.buf[:copy(s.buf, s.buf[i+1:])]
	}
}

func (s *stderrLog) line(b []byte) {
	b = bytes.TrimRight(b, "\r")
	if len(b) == 0 {
		return
	}
	if !s.lim.Allow() {
		s.dropped++
		return
	}
	if s.dropped > 0 {
		s.log.Warn("stdio server's stderr: lines left out of the log", "count", s.dropped)
		s.dropped = 0
	}
	s.log.Info("stdio server's stderr", "line", hub.Truncate(b, maxStderrLine))
}
