package registry

import (
	"hash/maphash"
	"sync"
	"sync/atomic"

	"github.com/xiaozhi-hub/hub"
)

// Locking. A device's state is its entry's, under the entry's own mutex
// (entry.mu), so that what one device does (its discovery, its calls)
// never waits for another's. Which entries exist is the devices map's,
// split into shards each under a mutex held only for one map operation.
// (One RWMutex over everything made a connect storm a convoy: each
// Connect took it for writing, each hello's device lookup for reading,
// and each hand-over woke a goroutine at the back of a run queue
// thousands long; BENCHMARKS.md, issue 20.)
//
// Lock order, outermost first; a goroutine holds at most one entry's
// locks:
//
//	entry.saveMu   (the device's store writes, one at a time)
//	entry.mu       (the device's fields, never held across I/O)
//	shard.mu       (inside deviceMap's methods only)
//	Registry.tsMu  (the shared tool lists, inside intern and release)
//
// An entry taken out of the map is marked gone (under its mu) and never
// put back: a device that comes again gets a new entry. So "is e still
// the device's entry" is !e.gone, read under e.mu.

// shardCount spreads the devices over this many maps (a power of two).
const shardCount = 64

// deviceMap is every known device's entry by id.
type deviceMap struct {
	seed   maphash.Seed
	count  atomic.Int64
	shards [shardCount]shard
}

type shard struct {
	mu sync.Mutex
	m  map[string]*entry
}

func newDeviceMap() *deviceMap {
	d := &deviceMap{seed: maphash.MakeSeed()}
	for i := range d.shards {
		d.shards[i].m = map[string]*entry{}
	}
	return d
}

func (d *deviceMap) shard(id string) *shard {
	return &d.shards[maphash.String(d.seed, id)&(shardCount-1)]
}

// get returns id's entry, or nil.
func (d *deviceMap) get(id string) *entry {
	s := d.shard(id)
	s.mu.Lock()
	e := s.m[id]
	s.mu.Unlock()
	return e
}

// add puts e in the map unless id has an entry; it returns the entry the
// map holds for id and whether it is e.
func (d *deviceMap) add(id string, e *entry) (*entry, bool) {
	s := d.shard(id)
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur, ok := s.m[id]; ok {
		return cur, false
	}
	s.m[id] = e
	d.count.Add(1)
	return e, true
}

// removeLocked takes e out of the map and marks it gone, if it is still
// there; e.mu is held. It reports whether it did.
func (d *deviceMap) removeLocked(id string, e *entry) bool {
	if e.gone {
		return false
	}
	e.gone = true
	s := d.shard(id)
	s.mu.Lock()
	if s.m[id] == e {
		delete(s.m, id)
		d.count.Add(-1)
	}
	s.mu.Unlock()
	return true
}

// eachLocked calls f with each entry that is in the map, its mu held
// (entries gone meanwhile are skipped); with offline, only with those
// that have no link (read without their mu, so that the connected ones
// are not locked at all). Each entry is as it was when f saw it: the map
// is never stopped as a whole, one shard at a time lists its entries.
func (d *deviceMap) eachLocked(offline bool, f func(e *entry)) {
	var small [256]*entry // a shard's entries, up to ~16,000 devices
	buf := small[:0]
	for i := range d.shards {
		s := &d.shards[i]
		s.mu.Lock()
		buf = buf[:0]
		for _, e := range s.m {
			if !offline || !e.linked.Load() {
				buf = append(buf, e)
			}
		}
		s.mu.Unlock()
		for _, e := range buf {
			e.mu.Lock()
			if !e.gone {
				f(e)
			}
			e.mu.Unlock()
		}
	}
}

// newEntry is a device the hub has just heard of.
func newEntry(d hub.Device) *entry {
	return &entry{dev: d, things: map[string]*hub.Thing{}}
}

// lockedEntry returns id's entry with its mu held, creating the entry
// from d when id has none (created says so). An entry removed meanwhile is
// not returned: the device's next entry is.
func (r *Registry) lockedEntry(id string, d hub.Device) (e *entry, created bool) {
	for {
		e, created = r.devices.get(id), false
		if e == nil {
			e, created = r.devices.add(id, newEntry(d))
		}
		e.mu.Lock()
		if !e.gone {
			return e, created
		}
		e.mu.Unlock()
	}
}

// entryLocked returns id's entry with its mu held, or nil when the device
// is unknown.
func (r *Registry) entryLocked(id string) *entry {
	for {
		e := r.devices.get(id)
		if e == nil {
			return nil
		}
		e.mu.Lock()
		if !e.gone {
			return e
		}
		e.mu.Unlock()
	}
}
