package mqttbroker

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// maxLimitKeys bounds the addresses a keyedLimiter remembers.
const maxLimitKeys = 10_000

// keyedLimiter is a rate.Limiter per key (a source address), bounded in
// the keys it remembers.
type keyedLimiter struct {
	every rate.Limit
	burst int

	mu   sync.Mutex
	keys map[string]*rate.Limiter
}

func newKeyedLimiter(every rate.Limit, burst int) *keyedLimiter {
	return &keyedLimiter{every: every, burst: burst, keys: make(map[string]*rate.Limiter)}
}

// ok reports whether key has a token left, without taking it.
func (l *keyedLimiter) ok(key string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	lim := l.keys[key]
	return lim == nil || lim.Tokens() >= 1
}

// take takes one of key's tokens, if it has one.
func (l *keyedLimiter) take(key string) {
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	lim := l.keys[key]
	if lim == nil {
		if len(l.keys) >= maxLimitKeys {
			l.sweepLocked(now)
		}
		lim = rate.NewLimiter(l.every, l.burst)
		l.keys[key] = lim
	}
	lim.AllowN(now, 1)
}

// sweepLocked forgets keys whose allowance is whole again (they are no
// different from new ones); if every key is still busy, it forgets them
// all rather than grow.
func (l *keyedLimiter) sweepLocked(now time.Time) {
	for k, lim := range l.keys {
		if lim.TokensAt(now) >= float64(l.burst) {
			delete(l.keys, k)
		}
	}
	if len(l.keys) >= maxLimitKeys {
		clear(l.keys)
	}
}
