package httpx

import "net/http"

// Providers is the HTTP client of the hub's requests to the speech and
// model providers when it is given none. Go's default transport keeps 2
// idle connections per host: with 50 turns at once the hub opened about
// 650 connections (each a TLS handshake against a real provider) for 900
// requests (BENCHMARKS.md, "Voice under load, from outside"); this keeps
// up to 64 per host.
var Providers = &http.Client{Transport: PooledTransport()}

// PooledTransport is Go's default transport (proxy from the environment,
// timeouts, HTTP/2) keeping up to 64 idle connections per host.
func PooledTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = 256
	t.MaxIdleConnsPerHost = 64
	return t
}
