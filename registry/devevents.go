package registry

import (
	"encoding/json"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/xiaozhi-hub/hub"
)

// What a device says that the hub does not act on becomes an event (Link.Event),
// and a device decides how much it says. So that one device cannot grow the
// hub's memory (the recorder queue, event subscribers) or its database, each
// device's events are bounded in rate and in size: beyond
// deviceEventRate per second (after a burst of deviceEventBurst) they are
// dropped, and data larger than maxEventData bytes of JSON is replaced by a
// summary with its first eventHead bytes. Both are counted in
// xiaozhi_hub_device_events_limited_total. The store bounds how many events
// it keeps per device and in total.
const (
	deviceEventRate  = 10
	deviceEventBurst = 100
	maxEventData     = 4 << 10
	eventHead        = 1 << 10
)

// eventBudget is a device's limit on events. It lives in the device's
// entry, so that reconnecting does not refill it; its rate.Limiter (80
// bytes) is made at the device's first event, so a device that sends none
// costs a pointer.
type eventBudget struct{ l atomic.Pointer[rate.Limiter] }

// take removes one token and reports whether there was one.
func (b *eventBudget) take(now time.Time) bool {
	l := b.l.Load()
	if l == nil {
		b.l.CompareAndSwap(nil, rate.NewLimiter(deviceEventRate, deviceEventBurst))
		l = b.l.Load()
	}
	return l.AllowN(now, 1)
}

// boundEventData returns data encoded as JSON if that is at most
// maxEventData bytes, else a summary: the "type" field of a map (the
// device message type), "truncated": true, the size and the first bytes.
func boundEventData(data any) (bounded any, truncated bool) {
	js, err := json.Marshal(data)
	if err != nil {
		return map[string]any{"error": hub.Truncate([]byte("event data is not JSON: "+err.Error()), eventHead)}, true
	}
	if len(js) <= maxEventData {
		return json.RawMessage(js), false
	}
	sum := map[string]any{"truncated": true, "bytes": len(js), "head": hub.Truncate(js, eventHead)}
	if m, ok := data.(map[string]any); ok {
		if t, ok := m["type"].(string); ok {
			sum["type"] = hub.Truncate([]byte(t), 64)
		}
	}
	return sum, true
}
