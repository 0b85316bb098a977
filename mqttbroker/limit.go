package mqttbroker

import (
	"sync"
	"time"

	"github.com/xiaozhi-hub/hub/internal/ratelimit"
	"golang.org/x/time/rate"
)

// keyedLimiter is a rate.Limiter per key (a source address), bounded in
// the keys it remembers (internal/ratelimit.Keyed), safe for concurrent
// use.
type keyedLimiter struct {
	mu   sync.Mutex
	keys *ratelimit.Keyed[struct{}]
}

func newKeyedLimiter(every rate.Limit, burst int) *keyedLimiter {
	return &keyedLimiter{keys: ratelimit.NewKeyed[struct{}](every, burst, 0)}
}

// ok reports whether key has a token left, without taking it.
func (l *keyedLimiter) ok(key string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.keys.Peek(key)
	return e == nil || e.Tokens() >= 1
}

// take takes one of key's tokens, if it has one.
func (l *keyedLimiter) take(key string) {
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.keys.Get(key, now).AllowN(now, 1)
}
