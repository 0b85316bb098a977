package registry

// MaxWriters is maxWriters, for the tests of the background writes.
const MaxWriters = maxWriters
