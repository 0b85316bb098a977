package oauth

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"unicode"
)

// checkRedirect says why a redirect URI cannot be registered, or nil.
// OAuth 2.1 §7.5 and RFC 8252: https anywhere; http only to loopback (a
// program on the same machine, any port); a private-use scheme of a native
// app (cursor://…, vscode://…, com.example.app:/cb). Refused: fragments,
// user names and passwords, ports outside 1–65535, backslashes, spaces and
// control characters (browsers and URL parsers disagree on them), and
// schemes that cannot receive a code or that a browser would run or show
// from its own internals (javascript:, data:, file:, view-source:, …).
func checkRedirect(raw string) error {
	if len(raw) > 2048 {
		return fmt.Errorf("redirect URI is longer than 2048 bytes")
	}
	if i := strings.IndexFunc(raw, func(r rune) bool { return r <= ' ' || r == 0x7f || unicode.IsSpace(r) }); i >= 0 {
		return fmt.Errorf("redirect URI %q contains a space or control character; percent-encode it", raw)
	}
	if strings.Contains(raw, `\`) {
		return fmt.Errorf("redirect URI %q contains a backslash, which browsers read as a slash; percent-encode it", raw)
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" {
		return fmt.Errorf("redirect URI %q is not an absolute URI", raw)
	}
	if u.Fragment != "" || strings.Contains(raw, "#") {
		return fmt.Errorf("redirect URI %q has a fragment, which OAuth forbids", raw)
	}
	scheme := strings.ToLower(u.Scheme)
	if refusedSchemes[scheme] {
		return fmt.Errorf("redirect URI %q uses the scheme %s:, which cannot safely receive an authorization code", raw, scheme)
	}
	if u.User != nil {
		return fmt.Errorf("redirect URI %q carries a user name or password, which OAuth redirect URIs must not", raw)
	}
	if err := checkPort(u); err != nil {
		return fmt.Errorf("redirect URI %q: %w", raw, err)
	}
	switch scheme {
	case "https":
		if u.Host == "" || u.Hostname() == "" {
			return fmt.Errorf("redirect URI %q has no host", raw)
		}
	case "http":
		if !loopback(u.Hostname()) {
			return fmt.Errorf("redirect URI %q uses http to another machine: OAuth 2.1 allows http only to localhost, 127.0.0.1 or [::1]; use https", raw)
		}
	}
	return nil
}

// refusedSchemes cannot receive an authorization code safely: a browser
// runs them (javascript:, vbscript:), makes a document of the URI itself
// (data:, blob:, filesystem:, view-source:, about:, mhtml:, jar:), opens
// local files or its own internals (file:, chrome:, chrome-extension:,
// moz-extension:, resource:, res:), or hands them to another program that
// is not the client (ws:, wss:, ftp:, mailto:, tel:, sms:, intent:).
var refusedSchemes = map[string]bool{
	"javascript": true, "vbscript": true, "livescript": true,
	"data": true, "blob": true, "filesystem": true, "view-source": true, "about": true, "mhtml": true, "jar": true,
	"file": true, "chrome": true, "chrome-extension": true, "moz-extension": true, "resource": true, "res": true,
	"ws": true, "wss": true, "ftp": true, "mailto": true, "tel": true, "sms": true, "intent": true,
}

// checkPort refuses a port that is not a number from 1 to 65535 (Go's
// parser takes any digits).
func checkPort(u *url.URL) error {
	p := u.Port()
	if p == "" {
		if strings.HasSuffix(u.Host, ":") {
			return fmt.Errorf("the port after %q is empty", u.Hostname())
		}
		return nil
	}
	n, err := strconv.Atoi(p)
	if err != nil || n < 1 || n > 65535 || len(p) > 5 {
		return fmt.Errorf("port %s is not a TCP port (1 to 65535)", p)
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
	if err1 != nil || err2 != nil || !strings.EqualFold(r.Scheme, "http") || !strings.EqualFold(a.Scheme, "http") ||
		checkPort(a) != nil || a.User != nil || strings.ContainsAny(asked, "\\# \t\r\n") {
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
