package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/xiaozhi-hub/hub"
)

// streamEvents serves live hub events as Server-Sent Events:
//
//	event: device_updated
//	id: 7
//	data: {"type":"device_updated","deviceId":"…","time":"…","data":{…}}
//
// ids number the events of this stream from 1 (there is no replay: a client
// that reconnects sees events from then on; GET /api/devices/{id}/events has
// the recorded ones). ?device= keeps one device's events, plus the hub's
// "events_dropped" notices, which say this stream fell behind and lost some.
// A ": keepalive" comment goes out every 15 s. The stream ends when the
// client goes away, when it takes no write for StreamWriteTimeout (a client
// that stopped reading), or when the registry closes. At most MaxStreams
// are open at once; more are refused with 429.
func (s *Server) streamEvents(w http.ResponseWriter, r *http.Request) {
	device := hub.NormalizeDeviceID(r.URL.Query().Get("device"))
	rc := http.NewResponseController(w)

	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	if r.Method == http.MethodHead {
		w.WriteHeader(http.StatusOK)
		return
	}

	if s.streams.Add(1) > s.maxStreams {
		s.streams.Add(-1)
		w.Header().Del("Content-Type")
		w.Header().Set("Retry-After", "30")
		writeErrorStatus(w, http.StatusTooManyRequests, hub.ETOOMANY, fmt.Sprintf(
			"%d event streams are already open, the most the hub allows (setting sse-max-streams); close one or try again later", s.maxStreams))
		return
	}
	defer s.streams.Add(-1)

	// Subscribe before the response starts, so that a client that has seen
	// the headers misses nothing that happens afterwards.
	events, cancel := s.reg.Subscribe()
	defer cancel()

	// Each write has a deadline of its own: a client that stops reading
	// is dropped instead of holding this goroutine forever.
	deadline := func() {
		if err := rc.SetWriteDeadline(time.Now().Add(s.writeTimeout)); err != nil && !errors.Is(err, http.ErrNotSupported) {
			s.log.Debug("api: cannot set write deadline for event stream", "err", err)
		}
	}
	deadline()
	w.WriteHeader(http.StatusOK)
	if _, err := w.Write([]byte(": connected\n\n")); err != nil {
		return
	}
	if err := rc.Flush(); err != nil {
		s.log.Error("api: event stream cannot flush; is a middleware buffering responses?", "err", err)
		return
	}

	tick := time.NewTicker(s.keepalive)
	defer tick.Stop()
	var seq int64
	buf := make([]byte, 0, 1024)
	for {
		select {
		case <-r.Context().Done():
			return
		case <-tick.C:
			deadline()
			if _, err := w.Write([]byte(": keepalive\n\n")); err != nil {
				return
			}
		case ev, ok := <-events:
			if !ok {
				return // the registry closed
			}
			if device != "" && ev.DeviceID != device && ev.DeviceID != "" {
				continue
			}
			data, err := json.Marshal(ev)
			if err != nil {
				s.log.Error("api: cannot encode event", "type", ev.Type, "err", err)
				continue
			}
			seq++
			buf = appendEvent(buf[:0], ev, seq, data)
			deadline()
			if _, err := w.Write(buf); err != nil {
				s.log.Info("api: event stream ended: write failed (client gone, or not reading)", "remote", r.RemoteAddr, "err", err)
				return
			}
		}
		if err := rc.Flush(); err != nil {
			return
		}
	}
}

// appendEvent formats one SSE message. json.Marshal never emits a newline,
// so data fits on one line; event types are fixed identifiers.
func appendEvent(b []byte, ev hub.Event, seq int64, data []byte) []byte {
	typ := ev.Type
	if typ == "" || strings.ContainsAny(typ, "\r\n") {
		typ = "message"
	}
	b = append(b, "event: "...)
	b = append(b, typ...)
	b = append(b, "\nid: "...)
	b = strconv.AppendInt(b, seq, 10)
	b = append(b, "\ndata: "...)
	b = append(b, data...)
	return append(b, "\n\n"...)
}
