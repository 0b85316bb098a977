package protocol

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
)

// RPC is one decoded JSON-RPC 2.0 message from a device: a response (ID set,
// Result or Error), a notification (Method set, no ID) or a request (both).
type RPC struct {
	ID     json.RawMessage
	Method string
	Params json.RawMessage
	Result json.RawMessage
	Error  *RPCError

	valid bool // decoded from JSON checked with json.Valid (see ResultMembers)
}

// RPCError is a JSON-RPC error object. Firmware sends only "message"
// (docs/protocol.md §8.2); HasCode tells whether a code was present.
type RPCError struct {
	Code    int             `json:"code"`
	HasCode bool            `json:"-"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *RPCError) Error() string {
	if e.HasCode {
		return fmt.Sprintf("%s (code %d)", e.Message, e.Code)
	}
	return e.Message
}

// IsResponse reports whether m answers a request.
func (m *RPC) IsResponse() bool { return len(m.ID) > 0 && m.Method == "" }

// IsNotification reports whether m is a notification.
func (m *RPC) IsNotification() bool { return m.Method != "" && len(m.ID) == 0 }

// IntID returns the id as an integer when it is a JSON number with no
// fractional part that fits in int64.
func (m *RPC) IntID() (int64, bool) {
	return parseIntID(m.ID)
}

func parseIntID(raw json.RawMessage) (int64, bool) {
	if len(raw) == 0 || raw[0] == '"' {
		return 0, false
	}
	if n, err := strconv.ParseInt(string(raw), 10, 64); err == nil {
		return n, true
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return 0, false
	}
	return int64(f), true
}

// DecodeRPC decodes a JSON-RPC payload. It accepts error objects with or
// without "code" and is strict only where meaning would otherwise be lost.
// The raw members of the result may share memory with payload.
func DecodeRPC(payload []byte) (RPC, error) {
	if m, ok := decodeRPCFast(payload); ok {
		return m, nil
	}
	return decodeRPCJSON(payload)
}

// decodeRPCJSON is DecodeRPC by encoding/json alone.
func decodeRPCJSON(payload []byte) (RPC, error) {
	var fields struct {
		JSONRPC json.RawMessage `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  json.RawMessage `json:"method"`
		Params  json.RawMessage `json:"params"`
		Result  json.RawMessage `json:"result"`
		Error   json.RawMessage `json:"error"`
	}
	trimmed := bytes.TrimSpace(payload)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return RPC{}, fmt.Errorf("%w: MCP payload is not a JSON object", ErrMalformed)
	}
	if err := json.Unmarshal(trimmed, &fields); err != nil {
		return RPC{}, fmt.Errorf("%w: MCP payload: %v", ErrMalformed, err)
	}
	var m RPC
	if len(fields.ID) > 0 && string(fields.ID) != "null" {
		m.ID = fields.ID
	}
	if len(fields.Method) > 0 {
		if err := json.Unmarshal(fields.Method, &m.Method); err != nil {
			return RPC{}, fmt.Errorf("%w: MCP \"method\" must be a string", ErrMalformed)
		}
	}
	m.Params = fields.Params
	if len(fields.Result) > 0 && string(fields.Result) != "null" {
		m.Result = fields.Result
	}
	if len(fields.Error) > 0 && string(fields.Error) != "null" {
		var e struct {
			Code    json.RawMessage `json:"code"`
			Message json.RawMessage `json:"message"`
			Data    json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal(fields.Error, &e); err != nil {
			// An error that is not an object still means failure; keep its text.
			m.Error = &RPCError{Message: "device error: " + truncate(fields.Error, 200)}
		} else {
			m.Error = &RPCError{Data: e.Data}
			if err := json.Unmarshal(e.Message, &m.Error.Message); err != nil || m.Error.Message == "" {
				m.Error.Message = "device returned an error without a message"
			}
			if len(e.Code) > 0 {
				var c float64
				if json.Unmarshal(e.Code, &c) == nil {
					m.Error.Code, m.Error.HasCode = int(c), true
				}
			}
		}
	}
	if m.Method == "" && m.ID == nil {
		return m, fmt.Errorf("%w: MCP payload has neither \"id\" nor \"method\"", ErrMalformed)
	}
	if m.Method == "" && m.Result == nil && m.Error == nil {
		return m, fmt.Errorf("%w: MCP response %s has neither \"result\" nor \"error\"", ErrMalformed, truncate(m.ID, 20))
	}
	return m, nil
}

// EncodeRequest builds a JSON-RPC request with a numeric id. params may be nil.
func EncodeRequest(id int64, method string, params any) ([]byte, error) {
	type req struct {
		JSONRPC string `json:"jsonrpc"`
		ID      int64  `json:"id"`
		Method  string `json:"method"`
		Params  any    `json:"params,omitempty"`
	}
	return json.Marshal(req{"2.0", id, method, params})
}

// EncodeNotification builds a JSON-RPC notification.
func EncodeNotification(method string, params any) ([]byte, error) {
	type note struct {
		JSONRPC string `json:"jsonrpc"`
		Method  string `json:"method"`
		Params  any    `json:"params,omitempty"`
	}
	return json.Marshal(note{"2.0", method, params})
}

// EncodeErrorResponse answers a request id (copied verbatim) with an error.
func EncodeErrorResponse(id json.RawMessage, code int, message string) []byte {
	b, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   RPCError        `json:"error"`
	}{"2.0", id, RPCError{Code: code, Message: message}})
	return b
}
