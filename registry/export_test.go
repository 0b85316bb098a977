package registry

// MaxWriters is maxWriters, for the tests of the background writes.
const MaxWriters = maxWriters

// HoldDevice takes device id's own lock, as the registry does while it
// changes that device (a tool list, a connection), and returns its
// release. The device must be known.
func HoldDevice(r *Registry, id string) (release func()) {
	e := r.entryLocked(id)
	return e.mu.Unlock
}
