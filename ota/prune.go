package ota

import (
	"context"
	"time"
)

// Under PolicyOpen and PolicyToken anyone may connect as a device new to
// the hub, which registers it (and, under PolicyToken, binds it to its
// Client-Id in a trust record). Records of devices that never did anything
// useful do not pile up: a device that is offline, never had a tool list or
// an IoT thing, has no call record or voice turn, was given nothing by a
// person (name, room, aliases, voice) and whose trust record holds no
// decision (approval, revocation, re-binding, transport) is forgotten, with
// its trust record, once it has not been seen for UnusedDeviceExpiry, or at
// once, the one seen longest ago first, while there are more than
// MaxUnusedDevices of them. A trust record whose device never got as far as
// registering goes after UnusedDeviceExpiry too. Every other device and
// record is kept, whatever its age: approved devices, devices with tools,
// things, history or a person's settings.
//
// The pruning runs on the path of new devices (an OTA check that gives one
// a token, a WebSocket connection of one under PolicyOpen): the devices a
// stranger can make bound its cost. It needs a store that can delete
// undecided trust records (package store's); in a cluster, whose trust
// records are shared, nothing is pruned.

// trustDeleter is the optional Store method pruning needs.
type trustDeleter interface {
	// DeleteUndecidedTrust removes a trust record that holds no decision
	// (see undecided), reporting whether one was removed.
	DeleteUndecidedTrust(ctx context.Context, deviceID string) (bool, error)
}

// sweepEvery is how often, at most, the path of a new device looks for
// records past UnusedDeviceExpiry (checking the count is cheaper).
const sweepEvery = time.Minute

// recountEvery is how long a count of the unused devices stands for the
// path of new devices (pruneLocked). Devices that were connected when it
// was made, and that leave without having done anything useful, are not in
// it: for that long the bound may be passed by them.
const recountEvery = time.Second

// undecided reports whether t holds nothing a person decided or would
// miss: what the hub binds at a first connection, or notes at a check.
func undecided(t Trust) bool {
	return t.Approved.IsZero() && t.Revoked.IsZero() && t.Generation == 0 && t.Transport == ""
}

func (s *Service) inRegistry(id string) bool {
	if s.opts.Registry == nil {
		return false
	}
	_, err := s.opts.Registry.Device(id)
	return err == nil
}

// PruneUnused forgets now the devices that never did anything useful
// (past UnusedDeviceExpiry, or beyond MaxUnusedDevices) and the trust
// records of devices that never registered, and reports how many devices
// it forgot.
func (s *Service) PruneUnused(ctx context.Context) (int, error) {
	s.pruneMu.Lock()
	defer s.pruneMu.Unlock()
	return s.pruneLocked(ctx, true)
}

// isNew reports whether the device is new to the hub: it has no trust
// record and is not registered.
func (s *Service) isNew(id string) bool {
	s.mu.RLock()
	_, known := s.trust[id]
	s.mu.RUnlock()
	return !known && !s.inRegistry(id)
}

// makeRoomFor prunes when the device is new to the hub: its records will
// need room.
func (s *Service) makeRoomFor(ctx context.Context, id string) {
	if s.isNew(id) {
		s.pruneUnused(ctx)
	}
}

// pruneUnused is PruneUnused on the path of a new device: it looks for
// expired records at most every sweepEvery, and does nothing while
// another pass runs. A failure is logged: the device is served all the same.
func (s *Service) pruneUnused(ctx context.Context) {
	if !s.pruneMu.TryLock() {
		return
	}
	defer s.pruneMu.Unlock()
	if _, err := s.pruneLocked(ctx, s.opts.Now().Sub(s.lastSweep) >= sweepEvery); err != nil {
		s.log.Warn("could not forget unused devices", "err", err)
	}
}

func (s *Service) pruneLocked(ctx context.Context, sweep bool) (int, error) {
	reg := s.opts.Registry
	del, ok := s.opts.Store.(trustDeleter)
	if reg == nil || !ok {
		return 0, nil
	}
	now := s.opts.Now()
	if !sweep {
		// Counting reads every device: in a storm of new devices each
		// would count all the others. Each new device adds at most one
		// unused device, so while the count last made plus the new
		// devices since stays within bounds, and it was made less than
		// recountEvery ago, nothing need be counted.
		if s.unusedAtMost <= s.opts.MaxUnusedDevices && now.Sub(s.countedAt) < recountEvery {
			s.unusedAtMost++
			return 0, nil
		}
		n := reg.UnusedCount()
		s.counts++
		s.unusedAtMost, s.countedAt = n+1, now
		if n <= s.opts.MaxUnusedDevices {
			return 0, nil // nothing expires now, and the count is within bounds
		}
	}
	cutoff := now.Add(-s.opts.UnusedDeviceExpiry)
	unused := reg.Unused() // the one seen longest ago first
	s.mu.RLock()
	junk := unused[:0]
	for _, d := range unused {
		if t, ok := s.trust[d.ID]; !ok || undecided(t) {
			junk = append(junk, d)
		}
	}
	var orphans []string
	if sweep {
		for id, t := range s.trust {
			if undecided(t) && s.boundAt[id].Before(cutoff) {
				orphans = append(orphans, id)
			}
		}
	}
	s.mu.RUnlock()
	if sweep {
		s.mu.Lock()
		for id, at := range s.boundAt {
			if at.Before(cutoff) {
				delete(s.boundAt, id)
			}
		}
		s.mu.Unlock()
	}
	removed, left := 0, len(junk)
	for _, d := range junk {
		expired := sweep && lastSeen(d.LastSeen, d.FirstSeen).Before(cutoff)
		if !expired && left <= s.opts.MaxUnusedDevices {
			break
		}
		gone, err := reg.ForgetUnused(ctx, d.ID)
		if err != nil {
			return removed, err
		}
		left-- // forgotten, or not unused after all (history, a new connection)
		if gone {
			removed++
			if err := s.forgetTrust(ctx, del, d.ID); err != nil {
				return removed, err
			}
		}
	}
	for _, id := range orphans {
		if s.inRegistry(id) {
			continue
		}
		if err := s.forgetTrust(ctx, del, id); err != nil {
			return removed, err
		}
	}
	if sweep {
		s.lastSweep = now
	}
	s.countedAt = time.Time{} // pruned or swept: the next new device counts afresh
	if removed > 0 {
		s.log.Info("forgot devices that never did anything useful", "devices", removed, "unused", left,
			"max", s.opts.MaxUnusedDevices)
	}
	return removed, nil
}

// forgetTrust removes the device's trust record, durably and from memory,
// if it holds no decision.
func (s *Service) forgetTrust(ctx context.Context, del trustDeleter, id string) error {
	s.adminMu.Lock() // no approval or binding of the device meanwhile
	defer s.adminMu.Unlock()
	s.mu.RLock()
	t, known := s.trust[id]
	s.mu.RUnlock()
	if !known || !undecided(t) {
		return nil
	}
	if _, err := del.DeleteUndecidedTrust(ctx, id); err != nil {
		return err
	}
	s.mu.Lock()
	if undecided(s.trust[id]) {
		delete(s.trust, id)
	}
	delete(s.boundAt, id)
	s.mu.Unlock()
	return nil
}

func lastSeen(last, first time.Time) time.Time {
	if last.After(first) {
		return last
	}
	return first
}
