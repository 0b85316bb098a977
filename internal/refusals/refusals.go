// Package refusals decides which refused requests are logged and recorded
// as a device's events. Refusals cost an attacker nothing (a login or a
// connection naming a device's MAC address needs no credentials), so
// without a limit they would replace a device's whole event history and
// fill the log. One Reports serves every transport (WebSocket handshakes,
// OTA checks, MQTT logins and publishes), so a device is protected the
// same way whichever door is knocked on.
package refusals

import (
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
)

// The limit per device named and per source address: the first Burst
// refusals, then one every Every.
const (
	Burst   = 10
	Every   = 5 * time.Minute
	maxKeys = 10_000 // devices and addresses remembered
)

// Reports decides which refusals are reported. The zero value is ready.
type Reports struct {
	unreported atomic.Uint64

	mu   sync.Mutex
	keys map[string]*bucket
}

type bucket struct {
	lim     *rate.Limiter
	skipped int // refusals left out since the last report
}

// Device and Address are the keys a refusal is counted under.
func Device(id string) string      { return "device " + id }
func Address(source string) string { return "address " + source }

// Allow reports whether a refusal counted under every one of keys may be
// reported at now, and how many under them were left out since their last
// report (to be said in the report). A refusal left out takes nothing from
// any key's allowance. A nil Reports allows everything.
func (r *Reports) Allow(now time.Time, keys ...string) (ok bool, skipped int) {
	if r == nil {
		return true, 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.keys == nil {
		r.keys = make(map[string]*bucket)
	}
	buckets := make([]*bucket, len(keys))
	ok = true
	for i, k := range keys {
		b := r.keys[k]
		if b == nil {
			if len(r.keys) >= maxKeys {
				r.sweepLocked(now)
			}
			b = &bucket{lim: rate.NewLimiter(rate.Every(Every), Burst)}
			r.keys[k] = b
		}
		buckets[i] = b
		ok = ok && b.lim.TokensAt(now) >= 1
	}
	for _, b := range buckets {
		if !ok {
			b.skipped++
			continue
		}
		b.lim.AllowN(now, 1)
		skipped = max(skipped, b.skipped)
		b.skipped = 0
	}
	if !ok {
		r.unreported.Add(1)
	}
	return ok, skipped
}

// Unreported counts the refusals left out so far.
func (r *Reports) Unreported() uint64 {
	if r == nil {
		return 0
	}
	return r.unreported.Load()
}

// sweepLocked forgets keys whose allowance is whole again (they are no
// different from new ones); if every key is still busy, it forgets them
// all rather than grow.
func (r *Reports) sweepLocked(now time.Time) {
	for k, b := range r.keys {
		if b.lim.TokensAt(now) >= Burst {
			delete(r.keys, k)
		}
	}
	if len(r.keys) >= maxKeys {
		clear(r.keys)
	}
}
