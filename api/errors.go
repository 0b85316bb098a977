package api

import (
	"log/slog"
	"net/http"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/internal/httperr"
)

// The error responses of every /api route follow the hub's one table
// (internal/httperr): {"error":{"code":…,"message":…}} with the status
// the code maps to.

// writeError answers err by the table; errors that are not *hub.Error are
// logged with log and shown as "internal error".
func writeError(w http.ResponseWriter, log *slog.Logger, err error) {
	httperr.Write(w, log, err)
}

// writeErrorStatus writes an error body with an explicit status, for the
// few HTTP-level errors that have no hub code of their own (405, 413).
func writeErrorStatus(w http.ResponseWriter, status int, code, msg string) {
	httperr.WriteStatus(w, status, code, msg)
}

// writeJSON writes v as a JSON response with the given status.
func writeJSON(w http.ResponseWriter, status int, v any) { httperr.JSON(w, status, v) }

// hint returns err with a pointer for people appended to its message, for
// the errors of other packages that say what went wrong but not, in API
// terms, where to look next.
func hint(err error, where string) error {
	return &hub.Error{Code: hub.ErrorCode(err), Message: hub.ErrorMessage(err) + " (" + where + ")", Err: err}
}
