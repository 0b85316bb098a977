package ota

import (
	"net/http"
	"strings"
)

// otaCORSHeaders are the request headers a browser page may send to the
// device-facing OTA routes: those the firmware sends, and those test pages
// (xinnan's test page, py-xiaozhi's web client) add.
var otaCORSHeaders = strings.Join([]string{
	"Device-Id", "Client-Id", "Content-Type", "Activation-Version", "Serial-Number",
	"Accept-Language", "User-Agent", "Authorization", "Protocol-Version",
}, ", ")

// isOTAPath reports whether path is one of the device-facing OTA routes
// (the check, activation and firmware downloads under /xiaozhi/ota).
func isOTAPath(path string) bool {
	return path == "/xiaozhi/ota" || strings.HasPrefix(path, "/xiaozhi/ota/")
}

// CORS lets browser pages on any origin use the device-facing OTA
// routes, which carry no admin secret: it answers preflight requests and
// marks responses as readable from any origin. Every other route, /api
// above all, is left as it is: a page on another origin cannot read it.
func CORS(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !isOTAPath(r.URL.Path) {
			next.ServeHTTP(w, r)
			return
		}
		h := w.Header()
		if r.Header.Get("Origin") != "" {
			// "*" and no credentials: the routes use no cookies, and a
			// device token is sent in the body of the answer, not asked for.
			h.Set("Access-Control-Allow-Origin", "*")
		}
		if r.Method != http.MethodOptions {
			next.ServeHTTP(w, r)
			return
		}
		h.Set("Allow", "GET, POST, OPTIONS")
		if r.Header.Get("Access-Control-Request-Method") != "" {
			h.Set("Access-Control-Allow-Methods", "GET, POST, OPTIONS")
			h.Set("Access-Control-Allow-Headers", otaCORSHeaders)
			h.Set("Access-Control-Max-Age", "600")
		}
		w.WriteHeader(http.StatusNoContent)
	})
}
