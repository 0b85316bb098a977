// Package ratelimit holds what the hub's rate limits share on top of
// golang.org/x/time/rate: a bounded map of limiters per key (a source
// address, a device named by strangers) and the wait a refused event is
// told.
package ratelimit

import (
	"math"
	"time"

	"golang.org/x/time/rate"
)

// DefaultMaxKeys is the keys a Keyed remembers unless told otherwise.
const DefaultMaxKeys = 10_000

// Keyed is a rate.Limiter per key, each with a value of type T beside it
// (state the owner keeps per key, such as a count), bounded in the keys it
// remembers. A key it does not remember has its whole allowance, so when it
// is full it forgets the keys whose allowance is whole again (they are no
// different from new ones); if every key is still busy, it forgets them all
// rather than grow.
//
// A Keyed is not safe for concurrent use: its owner holds a lock while it
// uses the Keyed and the entries it returns.
type Keyed[T any] struct {
	limit rate.Limit
	burst int
	max   int
	keys  map[string]*Entry[T]
}

// Entry is one key's limiter and value.
type Entry[T any] struct {
	rate.Limiter
	Value T
}

// NewKeyed returns a Keyed whose keys each get limit events per second
// after a burst of burst, remembering at most maxKeys keys
// (DefaultMaxKeys if maxKeys <= 0).
func NewKeyed[T any](limit rate.Limit, burst, maxKeys int) *Keyed[T] {
	if maxKeys <= 0 {
		maxKeys = DefaultMaxKeys
	}
	return &Keyed[T]{limit: limit, burst: burst, max: maxKeys, keys: make(map[string]*Entry[T])}
}

// Get returns key's entry, with a full allowance and a zero value if the
// key is new. When the Keyed is full it first forgets keys as at now.
func (k *Keyed[T]) Get(key string, now time.Time) *Entry[T] {
	e := k.keys[key]
	if e == nil {
		if len(k.keys) >= k.max {
			k.sweep(now)
		}
		e = new(Entry[T])
		fill(&e.Limiter, k.limit, k.burst)
		k.keys[key] = e
	}
	return e
}

// Peek returns key's entry, or nil if the key is not remembered (it has
// its whole allowance).
func (k *Keyed[T]) Peek(key string) *Entry[T] { return k.keys[key] }

// Len is the number of keys remembered.
func (k *Keyed[T]) Len() int { return len(k.keys) }

func (k *Keyed[T]) sweep(now time.Time) {
	for key, e := range k.keys {
		if e.TokensAt(now) >= float64(k.burst) {
			delete(k.keys, key)
		}
	}
	if len(k.keys) >= k.max {
		clear(k.keys)
	}
}

// fill makes l, a zero Limiter, the Limiter rate.NewLimiter(limit, burst)
// returns, in place, so that an Entry is one allocation. The bucket is
// empty at the zero time and refills from then, so it is full at any
// later date for any limit of more than burst tokens in 292 years (the
// longest time.Duration).
func fill(l *rate.Limiter, limit rate.Limit, burst int) {
	l.SetBurstAt(time.Time{}, burst)
	l.SetLimitAt(time.Time{}, limit)
}

// Take takes a token from l at now if it has one, or reports how long
// until it will have one (rate.InfDuration if l never refills); a refused
// event takes nothing. Unlike ReserveN and CancelAt, it allocates nothing
// and restores nothing. Callers that share l hold a lock around Take.
func Take(l *rate.Limiter, now time.Time) (ok bool, wait time.Duration) {
	if l.AllowN(now, 1) {
		return true, 0
	}
	return false, Wait(l, now)
}

// Wait reports how long until l has a token at now (0: it has one;
// rate.InfDuration if it never refills), taking nothing.
func Wait(l *rate.Limiter, now time.Time) time.Duration {
	tokens := l.TokensAt(now)
	if tokens >= 1 {
		return 0
	}
	limit := l.Limit()
	ns := (1 - tokens) / float64(limit) * float64(time.Second)
	if limit <= 0 || ns >= math.MaxInt64 {
		return rate.InfDuration
	}
	return time.Duration(ns)
}
