package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"

	"github.com/xiaozhi-hub/hub"
)

// errorBody is the JSON every error response carries:
//
//	{"error":{"code":"not_found","message":"device \"x\" is not known to the hub …"}}
//
// code is one of the hub.E* constants; clients switch on it, people read
// message.
type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// statusOf returns the HTTP status for an error's code (hub.ErrorCode).
// It is the table from error codes to HTTP statuses for people and
// programs: every /api route and /mcp (WriteError) answer by it.
func statusOf(err error) int {
	switch hub.ErrorCode(err) {
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
	case hub.ETOOMANY:
		return http.StatusTooManyRequests
	default:
		return http.StatusInternalServerError
	}
}

// WriteError writes err as an error response: the status its code maps to
// (ENOTFOUND 404, EINVALID 422, EBADREQUEST 400, EOFFLINE and ECONFLICT 409,
// EDEVICE and EGONE 502, ETIMEOUT 504, EBUSY and EUNAVAILABLE 503,
// EUNAUTHORIZED 401, ETOOMANY 429, anything else 500)
// and the body {"error":{"code":…,"message":…}}. Errors that are not
// *hub.Error are logged (with slog.Default) and shown as "internal error", so
// that internals never reach clients.
func WriteError(w http.ResponseWriter, err error) {
	writeError(w, slog.Default(), err)
}

// writeError is WriteError with a chosen logger.
func writeError(w http.ResponseWriter, log *slog.Logger, err error) {
	if err == nil {
		err = errors.New("WriteError called with a nil error")
	}
	code := hub.ErrorCode(err)
	msg := hub.ErrorMessage(err)
	if code == hub.EINTERNAL {
		var he *hub.Error
		switch {
		case errors.As(err, &he):
			// A coded internal error: its message was written for people.
			log.Error("api: internal error", "err", err)
		case errors.Is(err, context.Canceled):
			// The client went away; nobody will read the answer.
			log.Debug("api: request canceled", "err", err)
		case errors.Is(err, context.DeadlineExceeded):
			code, msg = hub.ETIMEOUT, "the operation timed out"
			log.Warn("api: deadline exceeded", "err", err)
		default:
			log.Error("api: internal error", "err", err)
		}
	}
	status := statusOf(&hub.Error{Code: code})
	writeErrorStatus(w, status, code, msg)
}

// writeErrorStatus writes an error body with an explicit status, for the
// few HTTP-level errors that have no hub code of their own (405, 413).
func writeErrorStatus(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, errorBody{Error: errorDetail{Code: code, Message: msg}})
}

// writeJSON writes v as a JSON response with the given status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // messages show <token>, not \u003ctoken\u003e
	if err := enc.Encode(v); err != nil {
		slog.Default().Error("api: cannot encode response", "err", err)
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

// hint returns err with a pointer for people appended to its message, for
// the errors of other packages that say what went wrong but not, in API
// terms, where to look next.
func hint(err error, where string) error {
	return &hub.Error{Code: hub.ErrorCode(err), Message: hub.ErrorMessage(err) + " (" + where + ")", Err: err}
}
