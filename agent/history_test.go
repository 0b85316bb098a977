package agent

import (
	"fmt"
	"testing"
	"time"
)

// A conversation is forgotten after its time to live without use, and
// past the bound the least recently used goes, whichever was created
// first: a device that talks all day keeps its history.
func TestSessionsForgetTheUnused(t *testing.T) {
	now := time.Unix(1_790_000_000, 0)
	ss := newSessions(3, 10, time.Hour, func() time.Time { return now })
	said := func(id string) []Message { return []Message{{Role: RoleUser, Text: "hello from " + id}} }
	for _, id := range []string{"a", "b", "c"} {
		ss.get(id).save(said(id))
		now = now.Add(time.Minute)
	}
	ss.get("a") // used again: b is now the least recently used
	now = now.Add(time.Minute)
	ss.get("d") // past the bound
	if _, ok := ss.m["b"]; ok || len(ss.m) != 3 {
		t.Fatalf("after the fourth: %v, want b dropped", keys(ss))
	}
	if h := ss.get("a").history(); len(h) != 1 || h[0].Text != "hello from a" {
		t.Fatalf("a's history: %+v", h)
	}

	now = now.Add(59 * time.Minute) // c was last used 62 minutes ago, a and d 59 and 60
	ss.get("d")
	if _, ok := ss.m["c"]; ok {
		t.Fatalf("c outlived its time to live: %v", keys(ss))
	}
	if _, ok := ss.m["a"]; !ok {
		t.Fatalf("a forgotten before its time: %v", keys(ss))
	}
	now = now.Add(2 * time.Hour)
	if h := ss.get("a").history(); len(h) != 0 {
		t.Fatalf("a's history after two hours unused: %+v", h)
	}
	if len(ss.m) != 1 || ss.lru.Len() != 1 {
		t.Fatalf("%d sessions, %d in order of use; want only a", len(ss.m), ss.lru.Len())
	}
}

func keys(ss *sessions) []string {
	var out []string
	for e := ss.lru.Front(); e != nil; e = e.Next() {
		out = append(out, fmt.Sprint(e.Value.(*session).id))
	}
	return out
}

// BenchmarkSessionsGet is a turn's look-up with 1,000 conversations kept.
func BenchmarkSessionsGet(b *testing.B) {
	ss := newSessions(1000, 10, time.Hour, time.Now)
	for i := range 1000 {
		ss.get(fmt.Sprint("device-", i))
	}
	i := 0
	for b.Loop() {
		ss.get(fmt.Sprint("device-", i%1000))
		i++
	}
}
