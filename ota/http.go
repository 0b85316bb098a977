package ota

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/internal/httperr"
)

// httpError is an error with a status of its own (413, 503), beyond what
// its code maps to.
type httpError struct {
	status int
	code   string
	msg    string
}

func (e *httpError) Error() string { return e.msg }

// refuse writes err as {"error":{"code","message"}} with the status its code
// maps to by the hub's one table (internal/httperr), in the device-facing
// bytes of writeJSON. Errors that are not *hub.Error are logged, shown as
// "internal error".
func (s *Service) refuse(w http.ResponseWriter, r *http.Request, err error) {
	var he *httpError
	if errors.As(err, &he) {
		writeError(w, he.status, he.code, he.msg)
		return
	}
	status := httperr.Status(hub.ErrorCode(err))
	if status >= 500 {
		s.log.Error("ota: request failed", "method", r.Method, "path", r.URL.Path, "status", status, "err", err)
	}
	if status >= 400 && status < 500 {
		s.log.Info("ota: request refused", "method", r.Method, "path", r.URL.Path,
			"device", r.Header.Get("Device-Id"), "remote", r.RemoteAddr, "status", status, "reason", hub.ErrorMessage(err))
	}
	writeError(w, status, hub.ErrorCode(err), hub.ErrorMessage(err))
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, map[string]any{"error": map[string]string{"code": code, "message": msg}})
}

// writeJSON writes v with an explicit Content-Length (the firmware's HTTP
// client reads bodies by length).
func writeJSON(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		status = http.StatusInternalServerError
		buf.Reset()
		buf.WriteString(`{"error":{"code":"internal","message":"internal error"}}` + "\n")
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(buf.Len()))
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func hexString(b []byte) string { return hex.EncodeToString(b) }
