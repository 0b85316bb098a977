package ratelimit_test

import (
	"fmt"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/xiaozhi-hub/hub/internal/ratelimit"
)

var t0 = time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)

// A new key has its whole burst, then a token per 1/limit; its value is
// kept with it.
func TestKeyedGivesEachKeyItsBurst(t *testing.T) {
	for _, now := range []time.Time{t0, time.Now(), time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC)} {
		k := ratelimit.NewKeyed[int](rate.Every(5*time.Minute), 10, 0)
		e := k.Get("a", now)
		n := 0
		for e.AllowN(now, 1) {
			n++
		}
		if n != 10 {
			t.Fatalf("at %v a new key allowed %d events, want its burst of 10", now, n)
		}
		e.Value = 7
		if e := k.Get("a", now); e.Value != 7 || e.AllowN(now.Add(4*time.Minute), 1) || !e.AllowN(now.Add(5*time.Minute), 1) {
			t.Fatalf("the key lost its value or its refill: value %d", e.Value)
		}
		if !k.Get("b", now).AllowN(now, 1) {
			t.Fatal("another key was limited")
		}
	}
}

// A full Keyed forgets the keys whose allowance is whole again, keeps the
// busy ones, and forgets everything rather than grow past its bound.
func TestKeyedIsBounded(t *testing.T) {
	k := ratelimit.NewKeyed[struct{}](1, 2, 4)
	k.Get("busy", t0).AllowN(t0, 2)
	for i := range 3 {
		k.Get(fmt.Sprint("idle", i), t0)
	}
	k.Get("new", t0)
	if k.Len() != 2 {
		t.Fatalf("%d keys after a sweep, want 2 (the busy one and the new one)", k.Len())
	}
	if k.Get("busy", t0).AllowN(t0, 1) {
		t.Fatal("the sweep forgot a busy key: its allowance came back")
	}
	k.Get("new", t0).AllowN(t0, 1)
	for i := range 2 {
		k.Get(fmt.Sprint("busy", i), t0).AllowN(t0, 1)
	}
	k.Get("one more", t0)
	if k.Len() != 1 {
		t.Fatalf("%d keys when every key was busy, want 1 (all forgotten, then the new one)", k.Len())
	}
}

// Take takes a token while there is one and otherwise tells the time until
// the next, taking nothing.
func TestTake(t *testing.T) {
	l := rate.NewLimiter(2, 3)
	for i := range 3 {
		if ok, wait := ratelimit.Take(l, t0); !ok || wait != 0 {
			t.Fatalf("event %d: %v %v, want allowed", i, ok, wait)
		}
	}
	for range 5 {
		if ok, wait := ratelimit.Take(l, t0); ok || wait != 500*time.Millisecond {
			t.Fatalf("over the burst: %v %v, want refused with 500ms to wait", ok, wait)
		}
	}
	if ok, wait := ratelimit.Take(l, t0.Add(200*time.Millisecond)); ok || wait != 300*time.Millisecond {
		t.Fatalf("after 200ms: %v %v, want refused with 300ms to wait (refusals took nothing)", ok, wait)
	}
	if ok, _ := ratelimit.Take(l, t0.Add(500*time.Millisecond)); !ok {
		t.Fatal("a token did not come back after 1/limit")
	}
	if ok, wait := ratelimit.Take(rate.NewLimiter(0, 0), t0); ok || wait != rate.InfDuration {
		t.Fatalf("a limiter that never refills: %v %v", ok, wait)
	}
	if ok, _ := ratelimit.Take(rate.NewLimiter(rate.Inf, 0), t0); !ok {
		t.Fatal("an infinite limit refused")
	}
}
