package ota

import (
	"fmt"
	"net/http"
	"time"

	"github.com/xiaozhi-hub/hub"
)

// keepSeen protects a code whose device is still there: the firmware polls
// /activate every 3 s while it shows a code (10 s after an error) and
// re-runs the OTA check after ten polls, so a device that is really there
// was seen within this time.
const keepSeen = 30 * time.Second

// pendingSet holds the activations in progress, guarded by Service.mu, by
// identity (Device-Id and Client-Id: a stranger with a device's MAC gets a
// code of its own, which the device never shows). A code is unique among
// them. perAddr counts the codes issued to each source address.
type pendingSet struct {
	byKey   map[string]*pending
	byCode  map[string]*pending
	perAddr map[string]int
}

func newPendingSet() pendingSet {
	return pendingSet{byKey: map[string]*pending{}, byCode: map[string]*pending{}, perAddr: map[string]int{}}
}

func pendingKey(deviceID, clientID string) string { return deviceID + "\x00" + clientID }

func (p *pending) lastSeen() time.Time {
	if p.LastPoll.After(p.LastCheck) {
		return p.LastPoll
	}
	return p.LastCheck
}

func (ps *pendingSet) add(p *pending) {
	ps.byKey[pendingKey(p.DeviceID, p.ClientID)] = p
	ps.byCode[p.Code] = p
	ps.perAddr[p.Remote]++
}

func (ps *pendingSet) remove(p *pending) {
	delete(ps.byKey, pendingKey(p.DeviceID, p.ClientID))
	delete(ps.byCode, p.Code)
	if ps.perAddr[p.Remote]--; ps.perAddr[p.Remote] <= 0 {
		delete(ps.perAddr, p.Remote)
	}
}

func (ps *pendingSet) prune(now time.Time) {
	for _, p := range ps.byKey {
		if !now.Before(p.Expires) {
			ps.remove(p)
		}
	}
}

// removeDevice removes the codes of every identity with the device id.
func (ps *pendingSet) removeDevice(id string) {
	for _, p := range ps.byKey {
		if p.DeviceID == id {
			ps.remove(p)
		}
	}
}

// oldestSeen is the code seen longest ago among those keep selects.
func (ps *pendingSet) oldestSeen(keep func(*pending) bool) *pending {
	var old *pending
	for _, p := range ps.byKey {
		if keep(p) && (old == nil || p.lastSeen().Before(old.lastSeen())) {
			old = p
		}
	}
	return old
}

// makeRoom frees a place for a new code from addr, or refuses it (503:
// the firmware retries later). A code whose device was seen within keepSeen
// is never given up: that device is really there, polling. An address
// holding perAddr codes gives up its own oldest-seen one, so a flood from
// one address only replaces its own codes; when max codes are waiting, the
// one seen longest ago, from any address, goes.
func (ps *pendingSet) makeRoom(addr string, now time.Time, max, perAddr int) error {
	stale := func(p *pending) bool { return p != nil && now.Sub(p.lastSeen()) >= keepSeen }
	if ps.perAddr[addr] >= perAddr {
		p := ps.oldestSeen(func(p *pending) bool { return p.Remote == addr })
		if !stale(p) {
			return &httpError{http.StatusServiceUnavailable, hub.EUNAVAILABLE,
				fmt.Sprintf("too many devices at this address (%d) are waiting for activation, all of them polling; approve some first, or raise activation-codes-per-address", perAddr)}
		}
		ps.remove(p)
	}
	if len(ps.byKey) < max {
		return nil
	}
	if p := ps.oldestSeen(func(*pending) bool { return true }); stale(p) {
		ps.remove(p)
		return nil
	}
	return &httpError{http.StatusServiceUnavailable, hub.EUNAVAILABLE,
		"too many devices are waiting for activation, all of them polling; approve some, or retry when their codes expire"}
}
