package session

import (
	"context"
	"log/slog"
)

// deviceLogger is the Server's logger with the device's id as the first
// attribute of every record, as Logger.With("device", id) writes it. With
// copies the handler's preformatted state for every device (about 200
// bytes that every connected device kept); this adds the id to each
// record when it is written instead.
func deviceLogger(l *slog.Logger, id string) *slog.Logger {
	return slog.New(deviceHandler{Handler: l.Handler(), id: id})
}

type deviceHandler struct {
	slog.Handler
	id string
}

func (h deviceHandler) attr() slog.Attr { return slog.String("device", h.id) }

func (h deviceHandler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, r.Message, r.PC)
	out.AddAttrs(h.attr())
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(a)
		return true
	})
	return h.Handler.Handle(ctx, out)
}

func (h deviceHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return h.Handler.WithAttrs(append([]slog.Attr{h.attr()}, as...))
}

func (h deviceHandler) WithGroup(name string) slog.Handler {
	return h.Handler.WithAttrs([]slog.Attr{h.attr()}).WithGroup(name)
}
