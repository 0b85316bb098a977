package store

import (
	"errors"
	"testing"
)

// A row read while a write of its table finished may be the one the write
// replaced: it is returned to its reader (whose read began before the
// write returned) but not kept for the next.
func TestRowCacheKeepsNoRowReadAcrossAWrite(t *testing.T) {
	var c rowCache[int]
	v, err := c.get("k", func() (int, error) {
		c.forget("k") // the write commits while this read runs
		return 1, nil
	})
	if v != 1 || err != nil {
		t.Fatalf("first read: %d, %v", v, err)
	}
	if v, _ := c.get("k", func() (int, error) { return 2, nil }); v != 2 {
		t.Fatalf("second read: %d, want 2 (the row read across the write was kept)", v)
	}
	if v, _ := c.get("k", func() (int, error) { return 3, nil }); v != 2 {
		t.Fatalf("third read: %d, want the kept 2", v)
	}
}

func TestRowCacheKeepsNoError(t *testing.T) {
	var c rowCache[int]
	boom := errors.New("disk I/O error")
	if _, err := c.get("k", func() (int, error) { return 0, boom }); !errors.Is(err, boom) {
		t.Fatalf("error: %v", err)
	}
	if v, err := c.get("k", func() (int, error) { return 7, nil }); v != 7 || err != nil {
		t.Fatalf("after an error: %d, %v", v, err)
	}
}

// The cache is bounded: past maxCachedRows it starts again, and a row is
// then read again, not lost.
func TestRowCacheBounded(t *testing.T) {
	var c rowCache[int]
	reads := 0
	load := func() (int, error) { reads++; return reads, nil }
	for i := range maxCachedRows + 10 {
		if _, err := c.get(string(rune(i)), load); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(c.rows); n > maxCachedRows {
		t.Fatalf("%d rows kept, bound %d", n, maxCachedRows)
	}
	before := reads
	if _, err := c.get(string(rune(0)), load); err != nil || reads != before+1 {
		t.Fatalf("the first row, forgotten at the bound, was not read again (%d reads)", reads-before)
	}
}
