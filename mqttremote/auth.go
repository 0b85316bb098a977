package mqttremote

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/protocol"
)

// AuthHandler is the HTTP authenticator the external broker asks about each
// CONNECT (EMQX: authentication backend "HTTP server", POST with a JSON
// body {"clientid","username","password","peerhost"}). It answers EMQX's
// {"result":"allow"|"deny"|"ignore"}: allow or deny for logins the hub
// issued (checked by authorize, the device-auth policy), ignore for any
// other (the hub's own client), so that EMQX's next authenticator decides.
// The broker must send Authorization: Bearer <secret>.
func AuthHandler(secret string, authorize func(ctx context.Context, clientID, username, password, remote string) error, log *slog.Logger) http.Handler {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		got, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if secret == "" || subtle.ConstantTimeCompare([]byte(got), []byte(secret)) != 1 {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"error":{"code":"unauthorized","message":"the broker must send Authorization: Bearer <mqtt-broker-secret>"}}`)
			return
		}
		var req struct {
			ClientID string `json:"clientid"`
			Username string `json:"username"`
			Password string `json:"password"`
			PeerHost string `json:"peerhost"`
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, 4<<10))
		if err != nil || json.Unmarshal(body, &req) != nil {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"error":{"code":"bad_request","message":"the body must be JSON {\"clientid\",\"username\",\"password\",\"peerhost\"}"}}`)
			return
		}
		if _, err := protocol.ParseMQTTLogin(req.ClientID, req.Username, req.Password); err != nil && !strings.HasPrefix(req.ClientID, "GID_xzhub@@@") {
			_, _ = io.WriteString(w, `{"result":"ignore"}`)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
		defer cancel()
		if err := authorize(ctx, req.ClientID, req.Username, req.Password, req.PeerHost); err != nil {
			log.Warn("MQTT login refused", "clientId", req.ClientID, "username", req.Username, "remote", req.PeerHost, "reason", hub.ErrorMessage(err))
			_, _ = io.WriteString(w, `{"result":"deny"}`)
			return
		}
		_, _ = io.WriteString(w, `{"result":"allow","is_superuser":false}`)
	})
}
