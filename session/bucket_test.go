package session

import (
	"testing"
	"time"
)

func TestBucket(t *testing.T) {
	b := newBucket(10, 20)
	now := time.Now()
	n := 0
	for b.take(now) {
		n++
	}
	if n != 20 {
		t.Fatalf("burst = %d, want 20", n)
	}
	if !b.take(now.Add(150 * time.Millisecond)) {
		t.Fatal("tokens must refill at the rate")
	}
	if u := newBucket(0, 0); !u.take(now) {
		t.Fatal("rate 0 means unlimited")
	}
}
