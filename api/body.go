package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/xiaozhi-hub/hub"
)

// maxBody is the largest request body the API reads, unless a route sets
// a smaller one (bodySpec.limit).
const maxBody = 1 << 20

// errTooLarge is wrapped by the error for a body over its limit; handlers
// answer it with 413.
var errTooLarge = errors.New("request body too large")

// fieldKinds says, per top-level JSON field of a request body, what it must
// be, for error messages that name the field and its expected type.
type fieldKinds map[string]string

// bodySpec describes a request body for error messages.
type bodySpec struct {
	kinds fieldKinds
	shape string // an example, e.g. {"name":"…","room":"…"}
	limit int64  // the largest body; 0 is maxBody
}

// decodeBody reads a JSON object from the request body into dst. Unknown
// fields, wrong types, bodies that are not one JSON object and bodies over
// maxBody are EBADREQUEST errors naming the problem (errTooLarge for the
// last). An empty body is an error unless allowEmpty, in which case dst is
// left alone.
func decodeBody(w http.ResponseWriter, r *http.Request, dst any, spec bodySpec, allowEmpty bool) error {
	b, err := readBody(w, r, spec.limit)
	if err != nil {
		return err
	}
	return decodeBytes(b, dst, spec, allowEmpty)
}

// readBody reads the request body, at most limit bytes (0: maxBody).
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	if limit <= 0 {
		limit = maxBody
	}
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			size := fmt.Sprintf("%d KiB", limit>>10)
			if limit >= 1<<20 {
				size = fmt.Sprintf("%d MiB", limit>>20)
			}
			return nil, &hub.Error{Code: hub.EBADREQUEST, Message: "the request body is larger than " + size, Err: errTooLarge}
		}
		return nil, hub.Errorf(hub.EBADREQUEST, "could not read the request body: %v", err)
	}
	return b, nil
}

// decodeBytes is decodeBody for a body already read.
func decodeBytes(b []byte, dst any, spec bodySpec, allowEmpty bool) error {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		if allowEmpty {
			return nil
		}
		return hub.Errorf(hub.EBADREQUEST, "the request body is empty: send a JSON object like %s", spec.shape)
	}
	if b[0] != '{' {
		return hub.Errorf(hub.EBADREQUEST, "the request body must be a JSON object like %s", spec.shape)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return decodeError(err, spec)
	}
	if _, err := dec.Token(); err != io.EOF {
		return hub.Errorf(hub.EBADREQUEST, "the request body must be a single JSON object, but more follows it")
	}
	return nil
}

func decodeError(err error, spec bodySpec) error {
	if se, ok := errors.AsType[*json.SyntaxError](err); ok {
		return hub.Errorf(hub.EBADREQUEST, "the request body is not valid JSON (at byte %d): %v", se.Offset, se)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return hub.Errorf(hub.EBADREQUEST, "the request body is not valid JSON: it ends too early")
	}
	if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
		if te.Field == "" {
			return hub.Errorf(hub.EBADREQUEST, "the request body must be a JSON object like %s", spec.shape)
		}
		if want, ok := spec.kinds[te.Field]; ok {
			return hub.Errorf(hub.EBADREQUEST, "field %q must be %s, not %s", te.Field, want, valueKind(te.Value))
		}
		return hub.Errorf(hub.EBADREQUEST, "field %q must be of type %s, not %s", te.Field, te.Type, valueKind(te.Value))
	}
	// encoding/json reports unknown fields with a plain error:
	// `json: unknown field "x"`.
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return hub.Errorf(hub.EBADREQUEST, "unknown field %s: send a body like %s", name, spec.shape)
	}
	return hub.Errorf(hub.EBADREQUEST, "the request body is not valid: %v", strings.TrimPrefix(err.Error(), "json: "))
}

// valueKind turns UnmarshalTypeError.Value ("number", "number 1.5",
// "string") into words.
func valueKind(v string) string {
	switch {
	case v == "array", v == "object":
		return "an " + v
	case strings.HasPrefix(v, "number "):
		return "the number " + strings.TrimPrefix(v, "number ")
	case v == "":
		return "that"
	default:
		return "a " + v
	}
}

// pathID is the {id} of the route, normalised like every device id
// (hub.NormalizeDeviceID): /api/devices/DE:00:… is de:00:….
func pathID(r *http.Request) string { return hub.NormalizeDeviceID(r.PathValue("id")) }
