package registry

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/xiaozhi-hub/hub"
)

// A device the hub hears of is registered at its first connection, before
// it has shown to be of any use. Records that stay that way (anyone can
// connect under the open and token device-auth policies, as any device id)
// are forgotten by the OTA service's pruning (package ota, prune.go),
// through Unused and ForgetUnused. A device with anything worth keeping is
// never among them.

// unusedLocked reports whether e holds nothing worth keeping: it is offline
// (on every node), has never had a tool list or an IoT thing, and nothing
// was given to it by a person. e.mu is held.
func unusedLocked(e *entry) bool {
	d := &e.dev
	return e.link == nil && e.tools == nil && len(e.things) == 0 &&
		d.Name == "" && d.Room == "" && len(d.Aliases) == 0 && d.Voice == "" && d.Home == ""
}

// lastSeen is when the device was last heard of.
func lastSeen(d hub.Device) time.Time {
	if d.LastSeen.After(d.FirstSeen) {
		return d.LastSeen
	}
	return d.FirstSeen
}

// Unused returns the devices that hold nothing worth keeping, the one seen
// longest ago first: offline, never a tool list or an IoT thing, no name,
// room, aliases or voice given by a person. Whether they have history
// (call records, voice turns) is for ForgetUnused to check.
func (r *Registry) Unused() []hub.Device {
	var out []hub.Device
	r.devices.eachLocked(true, func(e *entry) {
		if unusedLocked(e) {
			out = append(out, e.dev)
		}
	})
	slices.SortFunc(out, func(a, b hub.Device) int {
		return cmp.Or(lastSeen(a).Compare(lastSeen(b)), cmp.Compare(a.ID, b.ID))
	})
	return out
}

// UnusedCount is len(Unused()) without copying or sorting: what the path
// of a new device checks before it looks further (in a connect storm,
// each new device counts the others, connected: those are not locked).
func (r *Registry) UnusedCount() int {
	n := 0
	r.devices.eachLocked(true, func(e *entry) {
		if unusedLocked(e) {
			n++
		}
	})
	return n
}

// ForgetUnused removes the device and its records if it still holds
// nothing worth keeping (see Unused) and has no history in the store. It
// reports whether it did. Unlike DeleteDevice it runs no OnDelete hooks:
// it is housekeeping, not a person saying that the device is not theirs;
// a forgotten device that comes back is registered afresh.
func (r *Registry) ForgetUnused(ctx context.Context, id string) (bool, error) {
	e := r.entryLocked(id)
	if e == nil {
		return false, nil
	}
	unused := unusedLocked(e)
	e.mu.Unlock()
	if !unused {
		return false, nil
	}
	used, err := r.store.HasHistory(ctx, id)
	if err != nil {
		return false, fmt.Errorf("forget device %s: %w", id, err)
	}
	if used {
		return false, nil
	}
	// As in deleteDevice, saveMu keeps the device's writes out meanwhile;
	// the entry is checked again under it.
	e.saveMu.Lock()
	defer e.saveMu.Unlock()
	e.mu.Lock()
	unused = !e.gone && unusedLocked(e)
	e.mu.Unlock()
	if !unused {
		return false, nil
	}
	if err := r.store.DeleteDevice(ctx, id); err != nil && hub.ErrorCode(err) != hub.ENOTFOUND {
		return false, fmt.Errorf("forget device %s: %w", id, err)
	}
	e.mu.Lock()
	// A device that connected while its row was deleted stays: its
	// queued writes (waiting for saveMu) store it again.
	gone := unusedLocked(e) && r.devices.removeLocked(id, e)
	e.mu.Unlock()
	if gone { // an unused device has no home (unusedLocked)
		r.publish(hub.EventDeviceDeleted, id, map[string]string{"reason": "unused"})
	}
	return gone, nil
}
