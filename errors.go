package hub

import (
	"errors"
	"fmt"
	"time"
)

// Error codes. Each maps to one HTTP status at the API boundary.
const (
	ENOTFOUND     = "not_found"           // 404
	EINVALID      = "invalid_argument"    // 422 (400 for malformed requests)
	EBADREQUEST   = "bad_request"         // 400
	EOFFLINE      = "device_offline"      // 409
	EDEVICE       = "device_error"        // 502: the device answered with an error
	EGONE         = "device_disconnected" // 502: the device went away mid-call
	ETIMEOUT      = "timeout"             // 504
	EBUSY         = "device_busy"         // 503: too many requests already wait for the device
	EUNAUTHORIZED = "unauthorized"        // 401
	EFORBIDDEN    = "forbidden"           // 403: known, but not allowed to do this
	ECONFLICT     = "conflict"            // 409
	EINTERNAL     = "internal"            // 500
	ETOOMANY      = "too_many_requests"   // 429: slow down (Retry-After says when)
	EUNAVAILABLE  = "unavailable"         // 503: a part of the hub is not set up (the message says how)
)

// Error is an error with a code and a message a person can act on.
type Error struct {
	Code    string
	Message string
	Err     error // optional cause, for errors.Is/As
	// RetryAfter, for ETOOMANY, is when trying again may succeed (HTTP
	// surfaces send it as Retry-After).
	RetryAfter time.Duration
}

func (e *Error) Error() string {
	if e.Err != nil && e.Message == "" {
		return e.Err.Error()
	}
	return e.Message
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an *Error with the given code and a formatted message.
// A %w verb in format wraps its argument as the cause.
func Errorf(code, format string, args ...any) *Error {
	err := fmt.Errorf(format, args...)
	return &Error{Code: code, Message: err.Error(), Err: errors.Unwrap(err)}
}

// ErrorCode returns the code of the first *Error in err's chain, EINTERNAL
// for any other error, and "" for nil.
func ErrorCode(err error) string {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return EINTERNAL
}

// ErrorMessage returns the message of the first *Error in err's chain, or a
// generic text for other errors so that internals do not leak to clients.
func ErrorMessage(err error) string {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Message
	}
	return "internal error"
}

// RetryAfter returns the RetryAfter of the first *Error in err's chain.
func RetryAfter(err error) time.Duration {
	var e *Error
	if errors.As(err, &e) {
		return e.RetryAfter
	}
	return 0
}
