// Package httperr is the one table from the hub's error codes to HTTP
// statuses, and the error body people and programs get:
//
//	{"error":{"code":"not_found","message":"device \"x\" is not known to the hub …"}}
//
// Every HTTP surface answers by it: the API (`api`), `/mcp` (`mcpserver`),
// and the device-facing routes (`ota`, `session`), which keep their own
// exact bytes but take their statuses from Status.
package httperr

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/xiaozhi-hub/hub"
)

// Status returns the HTTP status for an error code (hub.ErrorCode):
// ENOTFOUND 404, EINVALID 422, EBADREQUEST 400, EOFFLINE and ECONFLICT 409,
// EDEVICE and EGONE 502, ETIMEOUT 504, EBUSY and EUNAVAILABLE 503,
// EUNAUTHORIZED 401, EFORBIDDEN 403, ETOOMANY 429, anything else 500.
func Status(code string) int {
	switch code {
	case hub.ENOTFOUND:
		return http.StatusNotFound
	case hub.EINVALID:
		return http.StatusUnprocessableEntity
	case hub.EBADREQUEST:
		return http.StatusBadRequest
	case hub.EOFFLINE, hub.ECONFLICT:
		return http.StatusConflict
	case hub.EDEVICE, hub.EGONE:
		return http.StatusBadGateway
	case hub.ETIMEOUT:
		return http.StatusGatewayTimeout
	case hub.EBUSY, hub.EUNAVAILABLE:
		return http.StatusServiceUnavailable
	case hub.EUNAUTHORIZED:
		return http.StatusUnauthorized
	case hub.EFORBIDDEN:
		return http.StatusForbidden
	case hub.ETOOMANY:
		return http.StatusTooManyRequests
	default:
		return http.StatusInternalServerError
	}
}

// Public is what a client may be shown of err: its code and message.
// Errors that are not *hub.Error are logged and become "internal error",
// so that internals never reach clients; a deadline becomes ETIMEOUT, and
// a canceled request (the client went away) is logged at debug level.
func Public(log *slog.Logger, err error) (code, msg string) {
	if err == nil {
		err = errors.New("an error response was written for a nil error")
	}
	code, msg = hub.ErrorCode(err), hub.ErrorMessage(err)
	if code != hub.EINTERNAL {
		return code, msg
	}
	var he *hub.Error
	switch {
	case errors.As(err, &he):
		// A coded internal error: its message was written for people.
		log.Error("internal error", "err", err)
	case errors.Is(err, context.Canceled):
		log.Debug("request canceled", "err", err)
	case errors.Is(err, context.DeadlineExceeded):
		code, msg = hub.ETIMEOUT, "the operation timed out"
		log.Warn("deadline exceeded", "err", err)
	default:
		log.Error("internal error", "err", err)
	}
	return code, msg
}

// Write answers err with the status its code maps to and the error body
// (see Public for what is shown).
func Write(w http.ResponseWriter, log *slog.Logger, err error) {
	code, msg := Public(log, err)
	if wait := hub.RetryAfter(err); wait > 0 && code == hub.ETOOMANY {
		w.Header().Set("Retry-After", strconv.Itoa(int((wait+time.Second-1)/time.Second)))
	}
	WriteStatus(w, Status(code), code, msg)
}

// WriteStatus writes an error body with an explicit status, for the few
// HTTP-level errors that have no hub code of their own (405, 413).
func WriteStatus(w http.ResponseWriter, status int, code, msg string) {
	JSON(w, status, body{Error: detail{Code: code, Message: msg}})
}

type body struct {
	Error detail `json:"error"`
}

type detail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// JSON writes v as a JSON response with the given status, uncached and
// never sniffed as another type.
func JSON(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // messages show <token>, not \u003ctoken\u003e
	if err := enc.Encode(v); err != nil {
		slog.Default().Error("cannot encode response", "err", err)
		status = http.StatusInternalServerError
		buf.Reset()
		buf.WriteString(`{"error":{"code":"internal","message":"internal error"}}` + "\n")
	}
	h := w.Header()
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}
