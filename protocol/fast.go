package protocol

import (
	"bytes"
	"encoding/json"

	"github.com/xiaozhi-hub/hub/internal/jsonscan"
)

// Fast paths for the messages every device sends: an envelope and a
// JSON-RPC payload with a few top-level members. encoding/json decodes them
// by reflection, allocating a copy of every raw member and, with its large
// stack frames, growing the stack of the connection's read goroutine, which
// an idle device then keeps. The fast paths find the members with
// jsonscan's flat, non-recursive scan of a document json.Valid has
// accepted. Whenever encoding/json's rules could give a different answer
// (escapes or non-ASCII bytes in a key, a key that matches only when case is
// ignored, a member of an unexpected kind, anything that is an error), they
// report !ok and the caller uses encoding/json (decodeMessageJSON,
// decodeRPCJSON), so results and error messages are unchanged. Tests call
// both and compare. Raw members they return share memory with the input.

// messageType is jsonscan.PlainString for a message type, without
// allocating for the types the hub knows.
func messageType(raw []byte) (string, bool) {
	if len(raw) >= 2 && raw[0] == '"' && raw[len(raw)-1] == '"' {
		switch string(raw[1 : len(raw)-1]) {
		case TypeMCP:
			return TypeMCP, true
		case TypeHello:
			return TypeHello, true
		case TypeIoT:
			return TypeIoT, true
		case TypeListen:
			return TypeListen, true
		case TypeAbort:
			return TypeAbort, true
		}
	}
	return jsonscan.PlainString(raw)
}

// stringOrNull decodes raw into a string field as encoding/json does when it
// is a plain string, null (the field is left "") or absent.
func stringOrNull(raw []byte) (string, bool) {
	if raw == nil || string(raw) == "null" {
		return "", true
	}
	return jsonscan.PlainString(raw)
}

var (
	messageKeys = []string{"type", "session_id", "payload"}
	rpcKeys     = []string{"id", "method", "params", "result", "error"}
)

// decodeMessageFast is DecodeMessage for a well-formed envelope.
func decodeMessageFast(data []byte) (Message, bool) {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 || trimmed[0] != '{' || !json.Valid(trimmed) {
		return Message{}, false
	}
	var vals [3][]byte
	if !jsonscan.ValidMembers(trimmed, messageKeys, vals[:]) || vals[0] == nil {
		return Message{}, false
	}
	m := Message{Raw: data, valid: true}
	var ok bool
	if m.Type, ok = messageType(vals[0]); !ok {
		return Message{}, false
	}
	if m.SessionID, ok = stringOrNull(vals[1]); !ok {
		return Message{}, false
	}
	if len(vals[2]) > 0 && string(vals[2]) != "null" {
		m.Payload = vals[2]
	}
	return m, true
}

// decodeRPCFast is DecodeRPC for a well-formed request, notification or
// result; error replies take the general path.
func decodeRPCFast(payload []byte) (RPC, bool) {
	trimmed := bytes.TrimSpace(payload)
	if len(trimmed) == 0 || trimmed[0] != '{' || !json.Valid(trimmed) {
		return RPC{}, false
	}
	return decodeValidRPC(trimmed)
}

// decodeValidRPC is decodeRPCFast for a payload known to be valid JSON.
func decodeValidRPC(trimmed []byte) (RPC, bool) {
	var vals [5][]byte
	if !jsonscan.ValidMembers(trimmed, rpcKeys, vals[:]) {
		return RPC{}, false
	}
	id, method, params, result, rerr := vals[0], vals[1], vals[2], vals[3], vals[4]
	if len(rerr) > 0 && string(rerr) != "null" {
		return RPC{}, false
	}
	var m RPC
	if len(id) > 0 && string(id) != "null" {
		m.ID = id
	}
	var ok bool
	if m.Method, ok = stringOrNull(method); !ok {
		return RPC{}, false
	}
	m.Params = params
	if len(result) > 0 && string(result) != "null" {
		m.Result = result
	}
	if m.Method == "" && (m.ID == nil || m.Result == nil) {
		return RPC{}, false // malformed: the general path says how
	}
	m.valid = true
	return m, true
}

// DecodePayload is DecodeRPC(m.Payload). For a message decoded by the fast
// path it skips checking again that the payload is valid JSON: it is part of
// the frame, which was checked.
func (m Message) DecodePayload() (RPC, error) {
	if m.valid {
		if trimmed := bytes.TrimSpace(m.Payload); len(trimmed) > 0 && trimmed[0] == '{' {
			if r, ok := decodeValidRPC(trimmed); ok {
				return r, nil
			}
		}
	}
	return DecodeRPC(m.Payload)
}

// ResultMembers is jsonscan.ObjectMembers(r.Result, keys, vals), without
// checking the result again when r was decoded from JSON that was checked.
func (r RPC) ResultMembers(keys []string, vals [][]byte) (ok bool) {
	if !r.valid {
		return jsonscan.ObjectMembers(r.Result, keys, vals)
	}
	return jsonscan.ValidMembers(r.Result, keys, vals)
}
