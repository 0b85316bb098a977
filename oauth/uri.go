package oauth

import (
	"fmt"
	"net"
	"net/url"
	"strings"
)

// checkRedirect says why a redirect URI cannot be registered, or nil.
// OAuth 2.1 §7.5 and RFC 8252: https anywhere; http only to loopback (a
// program on the same machine, any port); a private-use scheme of a native
// app (cursor://…, vscode://…). No fragments, and no schemes a browser
// would run (javascript:, data:, file:).
func checkRedirect(raw string) error {
	if len(raw) > 2048 {
		return fmt.Errorf("redirect URI is longer than 2048 bytes")
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" {
		return fmt.Errorf("redirect URI %q is not an absolute URI", raw)
	}
	if u.Fragment != "" || strings.Contains(raw, "#") {
		return fmt.Errorf("redirect URI %q has a fragment, which OAuth forbids", raw)
	}
	switch strings.ToLower(u.Scheme) {
	case "https":
		if u.Host == "" {
			return fmt.Errorf("redirect URI %q has no host", raw)
		}
	case "http":
		if !loopback(u.Hostname()) {
			return fmt.Errorf("redirect URI %q uses http to another machine: OAuth 2.1 allows http only to localhost, 127.0.0.1 or [::1]; use https", raw)
		}
	case "javascript", "data", "file", "vbscript", "about", "blob", "ws", "wss":
		return fmt.Errorf("redirect URI %q uses the scheme %s:, which cannot receive an authorization code", raw, u.Scheme)
	}
	return nil
}

func loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// redirectMatches reports whether the URI a client asks for is one it
// registered: exactly, except that a loopback http URI may use any port
// (RFC 8252 §7.3: native apps listen on a port they get at run time).
func redirectMatches(registered, asked string) bool {
	if registered == asked {
		return true
	}
	r, err1 := url.Parse(registered)
	a, err2 := url.Parse(asked)
	if err1 != nil || err2 != nil || !strings.EqualFold(r.Scheme, "http") || !strings.EqualFold(a.Scheme, "http") {
		return false
	}
	return loopback(r.Hostname()) && r.Hostname() == a.Hostname() &&
		r.EscapedPath() == a.EscapedPath() && r.RawQuery == a.RawQuery && a.Fragment == ""
}

// withQuery adds parameters (name, value pairs; empty values left out) to
// a redirect URI, keeping those it has.
func withQuery(raw string, kv ...string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	q := u.Query()
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			q.Set(kv[i], kv[i+1])
		}
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// origin is what a person needs to see of a redirect URI: where the code
// goes (scheme and host, or the app's scheme).
func origin(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	if u.Host == "" {
		return u.Scheme + ":"
	}
	return u.Scheme + "://" + u.Host
}
