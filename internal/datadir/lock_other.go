//go:build !unix

package datadir

import "os"

// tryLock does not lock on systems without flock: there a second hub on the
// same data directory is not detected.
func tryLock(*os.File) (held bool, err error) { return false, nil }
