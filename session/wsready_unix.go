//go:build linux || darwin

package session

import "syscall"

const canPeek = true

// peekReady reports whether the socket fd has a byte to read, has ended
// or has failed (true), or would block (false: raw.Read then waits for
// the poller), without taking the byte.
func peekReady(fd uintptr, b []byte) bool {
	n, _, err := syscall.Recvfrom(int(fd), b, syscall.MSG_PEEK)
	return n > 0 || err != syscall.EAGAIN
}
