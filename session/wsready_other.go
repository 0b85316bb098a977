//go:build !linux && !darwin

package session

const canPeek = false

func peekReady(uintptr, []byte) bool { return true }
