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

	// AddCalls appends call records in order, in one transaction, keeping
	// at most the newest N records (N set when the store is opened).
	AddCalls(ctx context.Context, cs []hub.CallRecord) error
	// LastCallID returns the largest call id ever stored (0 for none). The
	// registry numbers call records on from it, so that a record has its id
	// as soon as the call ends (in its call_finished event) and AddCalls
	// stores it under that id.
	LastCallID(ctx context.Context) (int64, error)
	// Calls returns records newest first.
	Calls(ctx context.Context, f hub.CallFilter) ([]hub.CallRecord, error)

	// AddEvents appends events in order, in one transaction, to the bounded
	// durable event log.
	AddEvents(ctx context.Context, es []hub.Event) error
	// Events returns the newest events, newest first, optionally for one device.
	Events(ctx context.Context, deviceID string, limit int) ([]hub.Event, error)
}
