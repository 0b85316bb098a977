//go:build race

package session_test

// raceEnabled: the race detector's instrumentation makes stack frames larger.
const raceEnabled = true
