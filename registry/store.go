package registry

import (
	"context"

	"github.com/xiaozhi-hub/hub"
)

// Store is the durable cache behind the registry (package store implements
// it on SQLite). The registry keeps everything it serves in memory and writes
// through to the Store; it reads the Store only at Load.
//
// Every method is safe for concurrent use. Writes are durable when they
// return (they survive kill -9 of the process). A missing device is reported
// as an error with code hub.ENOTFOUND.
type Store interface {
	// LoadAll returns every known device with its tools and things, for Load.
	LoadAll(ctx context.Context) ([]hub.Snapshot, error)

	// SaveDevice inserts or updates a device's identity and metadata
	// (everything in hub.Device except the derived fields).
	SaveDevice(ctx context.Context, d hub.Device) error
	// DeleteDevice removes a device with its tools, things and calls.
	DeleteDevice(ctx context.Context, id string) error

	// SaveTools replaces a device's tool list. hash identifies the list's
	// content; lists with the same hash are identical.
	SaveTools(ctx context.Context, deviceID, hash string, tools []hub.Tool) error
	// SaveThing inserts or replaces one thing (descriptor and state) by name.
	SaveThing(ctx context.Context, deviceID string, t hub.Thing) error

	// Log queues call records and events for the bounded logs (at most the
	// newest N records are kept, N set when the store is opened), in order,
	// without waiting for the write. done, if not nil, receives the write's
	// outcome once it is committed or has failed; it must return quickly.
	// An error means nothing was queued (the queue is full, the store is
	// closed) and done will not be called.
	Log(calls []hub.CallRecord, events []hub.Event, done func(error)) error
	// LastCallID returns the largest call id ever stored (0 for none). The
	// registry numbers call records on from it, so that a record has its id
	// as soon as the call ends (in its call_finished event) and Log
	// stores it under that id.
	LastCallID(ctx context.Context) (int64, error)
	// Calls returns records newest first.
	Calls(ctx context.Context, f hub.CallFilter) ([]hub.CallRecord, error)

	// Events returns the newest events, newest first, optionally for one device.
	Events(ctx context.Context, deviceID string, limit int) ([]hub.Event, error)
	// HasHistory reports whether the device has a call record or a voice
	// turn stored (a device without is forgotten when it is otherwise
	// unused: prune.go).
	HasHistory(ctx context.Context, deviceID string) (bool, error)
}
