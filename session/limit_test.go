package session

import (
	"testing"
	"time"
)

func TestFrameLimit(t *testing.T) {
	var f frameLimit
	now := time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)
	n := 0
	for f.allow(10, now) {
		n++
	}
	if n != 40 {
		t.Fatalf("burst = %d, want 40 (4× the rate)", n)
	}
	if f.allow(10, now.Add(50*time.Millisecond)) || !f.allow(10, now.Add(150*time.Millisecond)) {
		t.Fatal("frames must come back at the rate, one per 100 ms")
	}
	var u frameLimit
	for range 1000 {
		if !u.allow(0, now) {
			t.Fatal("rate 0 means unlimited")
		}
	}
	if u.l != nil {
		t.Fatal("an unlimited kind of frame made a limiter")
	}
}
