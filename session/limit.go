package session

import "time"

// bucket is a token bucket owned by one read loop (not safe for concurrent
// use): rate tokens per second, up to burst.
type bucket struct {
	rate, burst, tokens float64
	last                time.Time
}

func newBucket(rate, burst float64) bucket {
	return bucket{rate: rate, burst: burst, tokens: burst}
}

// take removes one token and reports whether there was one.
func (b *bucket) take(now time.Time) bool {
	if b.rate <= 0 {
		return true // unlimited
	}
	if !b.last.IsZero() {
		b.tokens += now.Sub(b.last).Seconds() * b.rate
		if b.tokens > b.burst {
			b.tokens = b.burst
		}
	}
	b.last = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}
