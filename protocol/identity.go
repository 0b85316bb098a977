package protocol

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/xiaozhi-hub/hub"
)

// Identity is who a connecting device says it is (docs/protocol.md §3.1).
// Browser clients cannot set headers, so each value may also come as a
// query parameter (device-id, client-id, protocol-version, authorization or
// token; "_" and case are ignored in the names).
type Identity struct {
	DeviceID        string
	ClientID        string
	Token           string // the bearer token, without "Bearer "
	ProtocolVersion int    // 0 when not given
}

// ParseIdentity reads and checks the identity of an upgrade request. Errors
// are EBADREQUEST *hub.Error values saying what to fix.
func ParseIdentity(r *http.Request) (Identity, error) {
	q := map[string]string{}
	for k, v := range r.URL.Query() {
		if len(v) > 0 {
			q[strings.NewReplacer("-", "", "_", "").Replace(strings.ToLower(k))] = v[0]
		}
	}
	get := func(header, query string) string {
		if v := strings.TrimSpace(r.Header.Get(header)); v != "" {
			return v
		}
		return strings.TrimSpace(q[query])
	}
	id := Identity{
		DeviceID: get("Device-Id", "deviceid"),
		ClientID: get("Client-Id", "clientid"),
	}
	auth := get("Authorization", "authorization")
	if auth == "" {
		auth = q["token"]
	}
	if rest, ok := strings.CutPrefix(auth, "Bearer "); ok {
		auth = rest
	} else if rest, ok := strings.CutPrefix(auth, "bearer "); ok {
		auth = rest
	}
	id.Token = strings.TrimSpace(auth)

	if id.DeviceID == "" {
		return id, hub.Errorf(hub.EBADREQUEST, "missing device id: send the Device-Id header (or a device-id query parameter)")
	}
	if err := checkDeviceID(id.DeviceID); err != nil {
		return id, err
	}
	id.DeviceID = hub.NormalizeDeviceID(id.DeviceID)
	if len(id.ClientID) > 128 {
		return id, hub.Errorf(hub.EBADREQUEST, "Client-Id is longer than 128 characters")
	}
	if v := get("Protocol-Version", "protocolversion"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 3 {
			return id, hub.Errorf(hub.EBADREQUEST, "Protocol-Version must be 1, 2 or 3, got %q", v)
		}
		id.ProtocolVersion = n
	}
	return id, nil
}

// checkDeviceID keeps ids usable in URL paths, logs and JSON built by string
// concatenation on the device (no quotes, backslashes, slashes or spaces).
func checkDeviceID(s string) error {
	if len(s) > 64 {
		return hub.Errorf(hub.EBADREQUEST, "device id is longer than 64 characters")
	}
	if len(s) >= len(hub.ServicePrefix) && strings.EqualFold(s[:len(hub.ServicePrefix)], hub.ServicePrefix) {
		return hub.Errorf(hub.EBADREQUEST, "device id %q may not start with %q: the call history names outside MCP services so", s, hub.ServicePrefix)
	}
	for _, c := range s {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune(":._-", c)
		if !ok {
			return hub.Errorf(hub.EBADREQUEST, "device id %q may contain only letters, digits and : . _ -", s)
		}
	}
	return nil
}
