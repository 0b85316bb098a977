package registrytest

import (
	"context"
	"sync/atomic"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/store"
)

// Store is the SQLite store with a hook before each device write (SetHook), so that a
// test can fail a write (a full disk) or hold it (to interleave it with
// another operation).
type Store struct {
	*store.Store
	hook atomic.Pointer[Hook]
}

// Hook runs before a device write (SaveDevice, DeleteDevice, SaveTools,
// SaveThing, named by op) of the device id; an error it returns is the
// write's result, and the write is not made.
type Hook func(ctx context.Context, op, deviceID string) error

// SetHook sets the hook (nil: none) for the writes that follow.
func (s *Store) SetHook(h Hook) {
	if h == nil {
		s.hook.Store(nil)
		return
	}
	s.hook.Store(&h)
}

func (s *Store) runHook(ctx context.Context, op, id string) error {
	h := s.hook.Load()
	if h == nil {
		return nil
	}
	return (*h)(ctx, op, id)
}

// SaveDevice implements registry.Store.
func (s *Store) SaveDevice(ctx context.Context, d hub.Device) error {
	if err := s.runHook(ctx, "SaveDevice", d.ID); err != nil {
		return err
	}
	return s.Store.SaveDevice(ctx, d)
}

// DeleteDevice implements registry.Store.
func (s *Store) DeleteDevice(ctx context.Context, id string) error {
	if err := s.runHook(ctx, "DeleteDevice", id); err != nil {
		return err
	}
	return s.Store.DeleteDevice(ctx, id)
}

// SaveTools implements registry.Store.
func (s *Store) SaveTools(ctx context.Context, id, hash string, tools []hub.Tool) error {
	if err := s.runHook(ctx, "SaveTools", id); err != nil {
		return err
	}
	return s.Store.SaveTools(ctx, id, hash, tools)
}

// SaveThing implements registry.Store.
func (s *Store) SaveThing(ctx context.Context, id string, t hub.Thing) error {
	if err := s.runHook(ctx, "SaveThing", id); err != nil {
		return err
	}
	return s.Store.SaveThing(ctx, id, t)
}
