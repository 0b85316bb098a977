//go:build !linux

package sim

import "syscall"

func bindNoPort(_, _ string, _ syscall.RawConn) error { return nil }
