// Package dashboard serves the hub's web page: devices with their tools and
// IoT things, calls from a form built from each tool's inputSchema, pending
// activations, and the live event stream. It is one static page; every
// piece of data comes from the REST API with the admin token, which the
// page asks for and keeps in the browser's local storage.
package dashboard

import (
	_ "embed"
	"net/http"
)

//go:embed index.html
var page []byte

// Handler serves the page. It needs no token: it holds no data.
func Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Type", "text/html; charset=utf-8")
		h.Set("Cache-Control", "no-cache")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Content-Security-Policy", "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'")
		w.Write(page)
	})
}
