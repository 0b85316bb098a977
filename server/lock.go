package server

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/xiaozhi-hub/hub"
)

// lockFile is the file, in the data directory, that a running hub holds an
// exclusive lock on. It names the hub's pid and listen address.
const lockFile = "hub.lock"

// dirLock is the running hub's hold on its data directory: two hubs on one
// database would each serve their own cache and diverge.
type dirLock struct {
	f   *os.File
	pid int
}

// lockDataDir takes the data directory's lock, or fails naming the process
// that holds it. The lock ends with the process (also on kill -9); the file
// stays.
func lockDataDir(dir string) (*dirLock, error) {
	path := filepath.Join(dir, lockFile)
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
	l := &dirLock{f: f, pid: os.Getpid()}
	if err := l.describe(""); err != nil {
		l.release()
		return nil, err
	}
	return l, nil
}

// describe writes the hub's pid and listen address into the lock file, for
// the message of a second hub.
func (l *dirLock) describe(addr string) error {
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

// release lets another hub take the directory.
func (l *dirLock) release() {
	if l != nil {
		l.f.Close()
	}
}
