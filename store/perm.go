package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// The database holds call arguments and results: like the hub's secrets,
// only its owner may read it. SQLite creates the -wal and -shm files with
// the mode of the database file, so creating that file 0600 before SQLite
// opens it covers all three.
const dbMode fs.FileMode = 0o600

// restrictFiles creates the database file at path with mode 0600 if it does
// not exist, and takes group and other access away from it and its -wal and
// -shm files if they have any (databases made by earlier versions were
// 0644).
func restrictFiles(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, dbMode)
	switch {
	case err == nil:
		if err := f.Close(); err != nil {
			return err
		}
	case !errors.Is(err, fs.ErrExist):
		return err
	}
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		fi, err := os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		if fi.Mode().IsRegular() && fi.Mode().Perm()&0o077 != 0 {
			if err := os.Chmod(p, fi.Mode().Perm()&^0o077); err != nil {
				return fmt.Errorf("restrict %s to its owner: %w", p, err)
			}
		}
	}
	return nil
}
