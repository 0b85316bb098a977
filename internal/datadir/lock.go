// Package datadir is a running hub's hold on its data directory: an
// exclusive lock that a second hub on the same directory runs into, with
// the holder's pid and listen address in the lock file for its message,
// and the names of the files the hub keeps there. Two hubs on one database
// would each serve their own cache and diverge.
package datadir

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/xiaozhi-hub/hub"
)

// LockFile is the file, in the data directory, that a running hub holds an
// exclusive lock on. It names the hub's pid and listen address.
const LockFile = "hub.lock"

// The other files a hub keeps in its data directory.
const (
	StoreFile        = "hub.db"        // the SQLite database
	TokenFile        = "api-token"     // the admin API token, unless api-token is set
	DeviceSecretFile = "device-secret" // signs device tokens: deleting it invalidates every token issued
	NATSDir          = "nats"          // the embedded NATS node's JetStream store (cluster-nats embedded)
)

// Lock is the running hub's hold on its data directory.
type Lock struct {
	f   *os.File
	pid int
	dir string
}

// Acquire creates the data directory (mode 0700) if it is missing and
// takes its lock, or fails naming the process that holds it. The lock
// ends with the process (also on kill -9); the file stays.
func Acquire(dir string) (*Lock, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	path := filepath.Join(dir, LockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("data dir lock: %w", err)
	}
	held, err := tryLock(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("data dir lock %s: %w", path, err)
	}
	if held {
		buf := make([]byte, 256)
		n, _ := f.ReadAt(buf, 0)
		f.Close()
		owner := strings.TrimSpace(string(buf[:n]))
		if owner == "" {
			owner = "pid unknown"
		}
		return nil, hub.Errorf(hub.ECONFLICT,
			"data directory %s is in use by another xiaozhi-hub (%s): stop that hub, or give this one another --data-dir", dir, owner)
	}
	l := &Lock{f: f, pid: os.Getpid(), dir: dir}
	if err := l.Describe(""); err != nil {
		l.Release()
		return nil, err
	}
	return l, nil
}

// Path is the path of name (StoreFile, …) in the data directory.
func (l *Lock) Path(name string) string { return filepath.Join(l.dir, name) }

// Describe writes the hub's pid and listen address into the lock file, for
// the message of a second hub.
func (l *Lock) Describe(addr string) error {
	s := fmt.Sprintf("pid %d", l.pid)
	if addr != "" {
		s += ", listening on " + addr
	}
	if err := l.f.Truncate(0); err != nil {
		return fmt.Errorf("data dir lock: %w", err)
	}
	if _, err := l.f.WriteAt([]byte(s+"\n"), 0); err != nil {
		return fmt.Errorf("data dir lock: %w", err)
	}
	return nil
}

// Release lets another hub take the directory.
func (l *Lock) Release() {
	if l != nil {
		l.f.Close()
	}
}
