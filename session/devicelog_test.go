package session

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"testing"
	"time"
)

// A device's log lines read as they did with Logger.With("device", id):
// the id first, then the line's own attributes, with the text and the JSON
// handler, through With and WithGroup.
func TestDeviceLogLinesNameTheDeviceFirst(t *testing.T) {
	noTime := &slog.HandlerOptions{Level: slog.LevelDebug, ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey && len(groups) == 0 {
			return slog.Attr{}
		}
		return a
	}}
	for _, handler := range []func(*bytes.Buffer) slog.Handler{
		func(b *bytes.Buffer) slog.Handler { return slog.NewTextHandler(b, noTime) },
		func(b *bytes.Buffer) slog.Handler { return slog.NewJSONHandler(b, noTime) },
	} {
		var got, want bytes.Buffer
		ours := deviceLogger(slog.New(handler(&got)).With("node", "n1"), "aa:bb:cc:dd:ee:ff")
		theirs := slog.New(handler(&want)).With("node", "n1").With("device", "aa:bb:cc:dd:ee:ff")
		for _, derive := range []func(*slog.Logger) *slog.Logger{
			func(l *slog.Logger) *slog.Logger { return l },
			func(l *slog.Logger) *slog.Logger { return l.With("session", "s1") },
			func(l *slog.Logger) *slog.Logger { return l.WithGroup("mcp") },
		} {
			for _, l := range []*slog.Logger{derive(ours), derive(theirs)} {
				l.Info("device connected", "transport", "websocket", "remote", "127.0.0.1:5000")
				l.Warn("bad input from device", "err", errors.New("bad frame"), "count", 3, "retryIn", time.Second)
				l.Debug("tool list changes", slog.Group("n", "added", 1))
			}
		}
		if got.String() != want.String() {
			t.Fatalf("log lines\n%s\nwant\n%s", got.String(), want.String())
		}
	}
}

// A device's logger costs each connected device a few dozen bytes, not a
// copy of the handler's state.
func TestDeviceLoggerIsSmall(t *testing.T) {
	base := slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil)).With("node", "n1")
	const devices = 2000
	loggers := make([]*slog.Logger, devices)
	var m runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m)
	before := m.HeapAlloc
	for i := range loggers {
		loggers[i] = deviceLogger(base, fmt.Sprintf("aa:bb:cc:dd:%02x:%02x", i/256, i%256))
	}
	runtime.GC()
	runtime.ReadMemStats(&m)
	per := float64(m.HeapAlloc-before) / devices
	runtime.KeepAlive(loggers)
	t.Logf("%.0f bytes per device logger (its id included)", per)
	if per > 100 { // with Logger.With: 181
		t.Fatalf("a device's logger holds %.0f bytes, want at most 100", per)
	}
}
