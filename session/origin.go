package session

import (
	"net/http"
	"net/url"
	"path"
	"strings"

	"github.com/xiaozhi-hub/hub"
)

// checkOrigin admits a request without an Origin header (devices and
// native clients send none), from the hub's own origin, or from an origin
// matching one of patterns, with the rules websocket.Accept applies (a
// pattern without "://" matches the host, one with it scheme://host, in
// path.Match syntax, case-insensitive). It runs before Accept so that a
// refused browser page learns which setting admits it.
func checkOrigin(r *http.Request, patterns []string) error {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return nil
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return hub.Errorf(hub.EUNAUTHORIZED, "the Origin header %q is not a URL with a host", origin)
	}
	if strings.EqualFold(u.Host, r.Host) {
		return nil
	}
	for _, p := range patterns {
		target := u.Host
		if strings.Contains(p, "://") {
			target = u.Scheme + "://" + u.Host
		}
		if ok, _ := path.Match(strings.ToLower(p), strings.ToLower(target)); ok {
			return nil
		}
	}
	return hub.Errorf(hub.EUNAUTHORIZED, "browser pages from %s may not open device connections to %s: "+
		"add %q to the hub setting device-origins (flag --device-origins, env XZ_HUB_DEVICE_ORIGINS) to admit them",
		origin, r.Host, u.Host)
}
