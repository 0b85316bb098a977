package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/xiaozhi-hub/hub"
)

func (s *Server) eventRoutes() []route {
	return []route{{"/api/events", []methodHandler{{"GET", s.streamEvents}}}}
}

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
	if r.Method == http.MethodHead {
		setSSEHeaders(w.Header())
		w.WriteHeader(http.StatusOK)
		return
	}

	if s.streams.Add(1) > s.maxStreams {
		s.streams.Add(-1)
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

	st := s.startSSE(w)
	if err := st.comment("connected"); err != nil {
		return
	}
	tick := time.NewTicker(s.keepalive)
	defer tick.Stop()
	var seq int64
	for {
		select {
		case <-r.Context().Done():
			return
		case <-tick.C:
			if err := st.comment("keepalive"); err != nil {
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
			if err := st.event(ev.Type, seq, data); err != nil {
				s.log.Info("api: event stream ended: write failed (client gone, or not reading)", "remote", r.RemoteAddr, "err", err)
				return
			}
		}
	}
}
