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
//
// A user's stream carries only the events of the devices in their homes
// (of calls, a guest's own only), and ends at once when their token is
// revoked or they leave a home (watch, below).
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
	watch := s.watch(principal(r))
	if watch.ended != "" {
		s.fail(w, r, hub.Errorf(hub.EUNAUTHORIZED, "%s", watch.ended))
		return
	}

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
		case <-watch.changed:
			if !watch.current() {
				_ = st.comment("access ended: " + watch.ended)
				return
			}
		case <-tick.C:
			if err := st.comment("keepalive"); err != nil {
				return
			}
		case ev, ok := <-events:
			if !ok {
				return // the registry closed
			}
			if !watch.current() { // a change since: not one event more on the old rights
				_ = st.comment("access ended: " + watch.ended)
				return
			}
			if device != "" && ev.DeviceID != device && ev.DeviceID != "" || !sees(watch.p, ev) {
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

// sees reports whether p may see ev: the admin everything; others the
// events of devices in their homes (Principal.Sees) and of their calls
// those they may see (Principal.SeesCall), and of the hub's own notices
// only that this stream lost events.
func sees(p *hub.Principal, ev hub.Event) bool {
	switch {
	case ev.Left: // a device gone for those who see only the home it left
		return !p.Admin && p.Sees(ev.Home) && !p.Sees(ev.LeftFor)
	case p.Admin:
		return true
	case ev.DeviceID == "":
		return ev.Type == "events_dropped"
	case ev.Type == hub.EventCallFinished:
		rec, ok := ev.Data.(hub.CallRecord)
		return ok && p.SeesCall(ev.Home, rec)
	}
	return p.Sees(ev.Home)
}

// streamWatch keeps a long-lived stream's principal current: changed is
// closed at the next change of people, homes or tokens; recheck then
// resolves the credential again. ended says why the stream must end ("":
// it goes on): the credential was revoked or expired, or a home was left.
type streamWatch struct {
	s       *Server
	p       *hub.Principal
	changed <-chan struct{}
	ended   string
}

// watch starts watching p (checking it once, as it may have changed since
// the request was authenticated).
func (s *Server) watch(p *hub.Principal) *streamWatch {
	w := &streamWatch{s: s, p: p}
	if p.Admin || s.accounts == nil {
		return w // the admin token lasts as long as the hub
	}
	w.recheck()
	return w
}

// current brings p up to date if people, homes or tokens changed since
// the last check, and reports whether the stream may go on.
func (w *streamWatch) current() bool {
	select {
	case <-w.changed:
		w.recheck()
	default:
	}
	return w.ended == ""
}

func (w *streamWatch) recheck() {
	w.changed = w.s.accounts.Changed(w.s.accounts.Generation())
	q, err := w.s.accounts.Recheck(w.p)
	if err != nil {
		w.ended = hub.ErrorMessage(err)
		return
	}
	for home := range w.p.Homes {
		if _, ok := q.Homes[home]; !ok {
			w.ended = "you are no longer in one of your homes; open the stream again"
			return
		}
	}
	w.p = q
}
