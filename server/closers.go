package server

import (
	"errors"
	"sync"
)

// closers is how a hub unwinds what it started: each step of Open that
// starts something pushes what stops it, and both a failed Open and Close
// run them in reverse, once. The order of the steps is therefore the
// shutdown order read backwards (see Open).
type closers struct {
	mu  sync.Mutex
	fns []func() error
}

// push adds f to be run before everything pushed earlier.
func (c *closers) push(f func() error) {
	c.mu.Lock()
	c.fns = append(c.fns, f)
	c.mu.Unlock()
}

// pushf is push for a closer that cannot fail.
func (c *closers) pushf(f func()) { c.push(func() error { f(); return nil }) }

// unwind runs the closers, last pushed first, and forgets them; a second
// call waits for the first and does nothing.
func (c *closers) unwind() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	for i := len(c.fns) - 1; i >= 0; i-- {
		errs = append(errs, c.fns[i]())
	}
	c.fns = nil
	return errors.Join(errs...)
}
