package api

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"

	"github.com/xiaozhi-hub/hub"
)

// RequireToken lets through only requests carrying
// "Authorization: Bearer <token>"; every other request gets 401 with a
// WWW-Authenticate: Bearer challenge and the error JSON (code
// "unauthorized"). The comparison takes the same time whatever the presented
// token is (both sides are hashed, then compared with crypto/subtle), so it
// reveals neither the token nor its length.
//
// An empty token would mean "no protection", which is never what anyone
// wants from an admin API: RequireToken panics on it, at startup, rather than
// serving an open API or one that silently refuses everything. Configuration
// must reject an empty token before it gets here.
func RequireToken(token string, next http.Handler) http.Handler {
	if token == "" {
		panic("api: RequireToken needs a non-empty bearer token; refusing to serve an unprotected admin API")
	}
	if next == nil {
		panic("api: RequireToken needs a handler")
	}
	want := sha256.Sum256([]byte(token))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, ok := bearer(r)
		if !ok {
			unauthorized(w, `Bearer realm="xiaozhi-hub"`,
				"this endpoint needs the admin token: send the header \"Authorization: Bearer <token>\"")
			return
		}
		if !matches(want, got) {
			unauthorized(w, `Bearer realm="xiaozhi-hub", error="invalid_token"`,
				"the bearer token is not the hub's admin token")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// matches compares a presented token with the hash of the expected one in
// constant time (see RequireToken).
func matches(want [32]byte, got string) bool {
	sum := sha256.Sum256([]byte(got))
	return subtle.ConstantTimeCompare(sum[:], want[:]) == 1
}

// bearer returns the token of an "Authorization: Bearer <token>" header.
// The scheme is case-insensitive (RFC 7235); the token may not be empty.
func bearer(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok = strings.TrimSpace(tok)
	return tok, tok != ""
}

func unauthorized(w http.ResponseWriter, challenge, msg string) {
	w.Header().Set("WWW-Authenticate", challenge)
	writeErrorStatus(w, http.StatusUnauthorized, hub.EUNAUTHORIZED, msg)
}
