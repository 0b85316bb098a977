package session_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/protocol"
	"github.com/xiaozhi-hub/hub/session"
)

// A device refused at the handshake gets the status of the hub's one error
// table: 401 for a refusal, 503 when the hub cannot decide now (a
// cluster's shared state that does not answer; the device retries), 500 for
// the hub's own fault, with the reason in the body.
func TestHandshakeRefusalsUseTheErrorTable(t *testing.T) {
	for _, tc := range []struct {
		err    error
		status int
	}{
		{hub.Errorf(hub.EUNAUTHORIZED, "device is not approved"), http.StatusUnauthorized},
		{hub.Errorf(hub.EUNAVAILABLE, "the cluster's shared state did not answer"), http.StatusServiceUnavailable},
		{hub.Errorf(hub.EINTERNAL, "the store failed"), http.StatusInternalServerError},
	} {
		_, url := startHub(t, session.Options{Authorize: func(*http.Request, protocol.Identity) error { return tc.err }})
		req, _ := http.NewRequest("GET", "http"+strings.TrimPrefix(url, "ws"), nil)
		req.Header.Set("Device-Id", "aa:bb:cc:dd:ee:01")
		req.Header.Set("Client-Id", "c1")
		req.Header.Set("Protocol-Version", "1")
		req.Header.Set("Connection", "Upgrade")
		req.Header.Set("Upgrade", "websocket")
		req.Header.Set("Sec-WebSocket-Version", "13")
		req.Header.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.status {
			t.Errorf("%s: status %d, want %d", hub.ErrorCode(tc.err), resp.StatusCode, tc.status)
		}
	}
}
