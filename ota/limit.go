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
	"github.com/xiaozhi-hub/hub/internal/ratelimit"
)

// rateLimiter is a token bucket per source address for the device-facing
// OTA routes, which need no credentials. A device makes one check at boot
// and, while it shows a code, one /activate every 3 s and a check every
// ~30 s: far below the default rate.
type rateLimiter struct {
	mu    sync.Mutex
	addrs *ratelimit.Keyed[struct{}]
}

func newRateLimiter(perSecond float64, burst int) *rateLimiter {
	return &rateLimiter{addrs: ratelimit.NewKeyed[struct{}](rate.Limit(perSecond), burst, 0)}
}

// allow takes a token from addr's bucket, or says how long to wait.
func (l *rateLimiter) allow(addr string, now time.Time) (bool, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return ratelimit.Take(&l.addrs.Get(addr, now).Limiter, now)
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
	secs := retryAfter(w, wait)
	s.refuse(w, r, &httpError{http.StatusTooManyRequests, hub.ETOOMANY,
		"too many OTA requests from this address; retry in " + strconv.Itoa(secs) + " s"})
	return false
}

// retryAfter sets the Retry-After header for a request refused for wait:
// its whole seconds plus one. It returns the seconds.
func retryAfter(w http.ResponseWriter, wait time.Duration) int {
	secs := int(wait/time.Second) + 1
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	return secs
}

// maxRecentNew is how many of an address's newly admitted identities are
// remembered, so that a device that checks again before it first connects
// is not counted twice.
const maxRecentNew = 16

// newDeviceQuota bounds, per source address, the device identities new to
// the hub that the OTA endpoint issues a token to (Options.NewDevicesPerAddr
// an hour, all at once at most). A device the hub knows is never counted.
type newDeviceQuota struct {
	mu    sync.Mutex
	addrs *ratelimit.Keyed[[]string] // identities admitted lately, oldest first
}

func newNewDeviceQuota(perHour int) *newDeviceQuota {
	return &newDeviceQuota{addrs: ratelimit.NewKeyed[[]string](rate.Every(time.Hour/time.Duration(perHour)), perHour, 0)}
}

// admit counts identity as a new device of addr, or says how long until
// addr may bring another one.
func (q *newDeviceQuota) admit(addr, identity string, now time.Time) (bool, time.Duration) {
	q.mu.Lock()
	defer q.mu.Unlock()
	a := q.addrs.Get(addr, now)
	if slices.Contains(a.Value, identity) {
		return true, 0
	}
	if ok, wait := ratelimit.Take(&a.Limiter, now); !ok {
		return false, wait
	}
	if len(a.Value) == maxRecentNew {
		a.Value = slices.Delete(a.Value, 0, 1)
	}
	a.Value = append(a.Value, identity)
	return true, 0
}

// newDeviceRefusal is the answer to an address over its quota of new
// devices: 429 with Retry-After. The firmware ignores Retry-After but
// retries the check 10 times, 10 s first and doubling (docs/protocol.md
// §2.5, about 2.8 h in all), so a real device gets through once the quota
// refills (by default one every 6 minutes).
func (s *Service) newDeviceRefusal(w http.ResponseWriter, wait time.Duration) error {
	secs := retryAfter(w, wait)
	return &httpError{http.StatusTooManyRequests, hub.ETOOMANY, fmt.Sprintf(
		"too many new devices from this address (%d an hour); retry in %d s, or raise new-devices-per-address "+
			"for a fleet behind one NAT (devices the hub knows are not counted)", s.opts.NewDevicesPerAddr, secs)}
}
