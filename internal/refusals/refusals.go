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

	"github.com/xiaozhi-hub/hub/internal/ratelimit"
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
	keys *ratelimit.Keyed[int] // each key's refusals left out since its last report
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
		r.keys = ratelimit.NewKeyed[int](rate.Every(Every), Burst, maxKeys)
	}
	entries := make([]*ratelimit.Entry[int], len(keys))
	ok = true
	for i, k := range keys {
		entries[i] = r.keys.Get(k, now)
		ok = ok && entries[i].TokensAt(now) >= 1
	}
	for _, e := range entries {
		if !ok {
			e.Value++
			continue
		}
		e.AllowN(now, 1)
		skipped = max(skipped, e.Value)
		e.Value = 0
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
