package ota

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/xiaozhi-hub/hub"
)

// maxLimited bounds the addresses the rate limiter remembers.
const maxLimited = 10_000

// rateLimiter is a token bucket per source address for the device-facing
// OTA routes, which need no credentials. A device makes one check at boot
// and, while it shows a code, one /activate every 3 s and a check every
// ~30 s: far below the default rate.
type rateLimiter struct {
	rate  float64 // tokens per second
	burst float64

	mu      sync.Mutex
	buckets map[string]*bucket
}

type bucket struct {
	tokens float64
	at     time.Time
}

func newRateLimiter(rate float64, burst int) *rateLimiter {
	return &rateLimiter{rate: rate, burst: float64(burst), buckets: map[string]*bucket{}}
}

// allow takes a token from addr's bucket, or says how long to wait.
func (l *rateLimiter) allow(addr string, now time.Time) (bool, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.buckets[addr]
	if b == nil {
		if len(l.buckets) >= maxLimited {
			l.sweepLocked(now)
		}
		b = &bucket{tokens: l.burst, at: now}
		l.buckets[addr] = b
	}
	b.tokens = min(l.burst, b.tokens+now.Sub(b.at).Seconds()*l.rate)
	b.at = now
	if b.tokens < 1 {
		return false, time.Duration((1 - b.tokens) / l.rate * float64(time.Second))
	}
	b.tokens--
	return true, 0
}

// sweepLocked forgets addresses whose bucket is full again (they are no
// different from new ones); if every address is still busy, it forgets
// them all rather than grow.
func (l *rateLimiter) sweepLocked(now time.Time) {
	for a, b := range l.buckets {
		if b.tokens+now.Sub(b.at).Seconds()*l.rate >= l.burst {
			delete(l.buckets, a)
		}
	}
	if len(l.buckets) >= maxLimited {
		clear(l.buckets)
	}
}

// limitKey is the source address a request is counted under (hub.SourceKey).
func limitKey(r *http.Request) string { return hub.SourceKey(r.RemoteAddr) }

// admit answers 429 with Retry-After and reports false when the request's
// address is over its rate.
func (s *Service) admit(w http.ResponseWriter, r *http.Request) bool {
	ok, wait := s.limiter.allow(limitKey(r), s.opts.Now())
	if ok {
		return true
	}
	secs := int(wait/time.Second) + 1
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	s.refuse(w, r, &httpError{http.StatusTooManyRequests, hub.ETOOMANY,
		"too many OTA requests from this address; retry in " + strconv.Itoa(secs) + " s"})
	return false
}

// maxRecentNew is how many of an address's newly admitted identities are
// remembered, so that a device that checks again before it first connects
// is not counted twice.
const maxRecentNew = 16

// newDeviceQuota bounds, per source address, the device identities new to
// the hub that the OTA endpoint issues a token to (Options.NewDevicesPerAddr
// an hour, all at once at most). A device the hub knows is never counted.
type newDeviceQuota struct {
	perHour int

	mu    sync.Mutex
	addrs map[string]*newDeviceAddr
}

type newDeviceAddr struct {
	lim    *rate.Limiter
	recent []string // identities admitted lately, oldest first
}

func newNewDeviceQuota(perHour int) *newDeviceQuota {
	return &newDeviceQuota{perHour: perHour, addrs: map[string]*newDeviceAddr{}}
}

// admit counts identity as a new device of addr, or says how long until
// addr may bring another one.
func (q *newDeviceQuota) admit(addr, identity string, now time.Time) (bool, time.Duration) {
	q.mu.Lock()
	defer q.mu.Unlock()
	a := q.addrs[addr]
	if a == nil {
		if len(q.addrs) >= maxLimited {
			q.sweepLocked(now)
		}
		a = &newDeviceAddr{lim: rate.NewLimiter(rate.Every(time.Hour/time.Duration(q.perHour)), q.perHour)}
		q.addrs[addr] = a
	}
	if slices.Contains(a.recent, identity) {
		return true, 0
	}
	r := a.lim.ReserveN(now, 1)
	if wait := r.DelayFrom(now); wait > 0 {
		r.CancelAt(now)
		return false, wait
	}
	if len(a.recent) == maxRecentNew {
		a.recent = slices.Delete(a.recent, 0, 1)
	}
	a.recent = append(a.recent, identity)
	return true, 0
}

// sweepLocked forgets addresses whose quota is whole again; if every
// address still has new devices counted, it forgets them all rather than
// grow.
func (q *newDeviceQuota) sweepLocked(now time.Time) {
	for addr, a := range q.addrs {
		if a.lim.TokensAt(now) >= float64(q.perHour) {
			delete(q.addrs, addr)
		}
	}
	if len(q.addrs) >= maxLimited {
		clear(q.addrs)
	}
}

// newDeviceRefusal is the answer to an address over its quota of new
// devices: 429 with Retry-After. The firmware ignores Retry-After but
// retries the check 10 times, 10 s first and doubling (docs/protocol.md
// §2.5, about 2.8 h in all), so a real device gets through once the quota
// refills (by default one every 6 minutes).
func (s *Service) newDeviceRefusal(w http.ResponseWriter, wait time.Duration) error {
	secs := int(wait/time.Second) + 1
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	return &httpError{http.StatusTooManyRequests, hub.ETOOMANY, fmt.Sprintf(
		"too many new devices from this address (%d an hour); retry in %d s, or raise new-devices-per-address "+
			"for a fleet behind one NAT (devices the hub knows are not counted)", s.opts.NewDevicesPerAddr, secs)}
}
