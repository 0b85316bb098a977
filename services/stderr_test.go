package services

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// A stdio server's stderr reaches the hub's log a line at a time, each
// line cut, and no more lines than the limit however much it writes.
func TestStderrLog(t *testing.T) {
	var out bytes.Buffer
	s := newStderrLog(slog.New(slog.NewTextHandler(&out, nil)))
	_, _ = s.Write([]byte("first li"))
	_, _ = s.Write([]byte("ne\r\nsecond\n" + strings.Repeat("x", 2000) + "\n"))
	for i := 0; i < 1000; i++ {
		_, _ = s.Write([]byte("flood\n"))
	}
	_, _ = s.Write([]byte(strings.Repeat("y", maxStderrBytes+10))) // no newline
	text := out.String()
	if !strings.Contains(text, `line="first line"`) || !strings.Contains(text, "line=second") {
		t.Fatalf("lines not logged as lines:\n%.500s", text)
	}
	if strings.Contains(text, strings.Repeat("x", maxStderrLine+1)) {
		t.Fatal("a long line was not cut")
	}
	if n := strings.Count(text, "\n"); n > stderrBurst+2 {
		t.Fatalf("%d lines logged from a flood; the limit is a burst of %d", n, stderrBurst)
	}
	if len(s.buf) > maxStderrBytes {
		t.Fatalf("%d bytes held without a newline", len(s.buf))
	}
}
