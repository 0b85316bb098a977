package session

import (
	"time"

	"golang.org/x/time/rate"
)

// frameLimit bounds one kind of frame from a device (Options.TextRate,
// Options.AudioRate): perSecond, after a burst of 4× that. Its
// rate.Limiter (80 bytes) is made at the first frame it counts, so a
// connection that sends none costs a pointer: an idle device sends only
// replies to the hub, which do not count, and audio only when it talks.
// Read loop only.
type frameLimit struct{ l *rate.Limiter }

// allow counts a frame at now and reports whether it is within the limit;
// perSecond <= 0 is no limit.
func (f *frameLimit) allow(perSecond float64, now time.Time) bool {
	if perSecond <= 0 {
		return true
	}
	if f.l == nil {
		f.l = rate.NewLimiter(rate.Limit(perSecond), max(1, int(4*perSecond)))
	}
	return f.l.AllowN(now, 1)
}
