package hub

import (
	"encoding/json"
	"time"
)

// Service kinds: an endpoint that a program connects to with the
// service's token (xiaozhi.me's "MCP 接入点"), or an MCP server the hub
// connects to, named in the config file (mcp-servers).
const (
	ServiceEndpoint   = "endpoint"
	ServiceConfigured = "configured"
)

// Service is an outside MCP server whose tools the hub offers beside the
// devices' tools (package services), as stored.
type Service struct {
	Name string
	Kind string // ServiceEndpoint or ServiceConfigured
	// Home is the home the service belongs to; "" is the hub's own,
	// offered to everyone.
	Home string
	// TokenHash is the SHA-256 of the endpoint's token (never the token);
	// empty for a configured server.
	TokenHash []byte
	Created   time.Time
	// Tools is the last tool list the service gave, served while it is away.
	Tools []Tool
}

// ServiceView is a service as the API shows it.
type ServiceView struct {
	Name    string    `json:"name"`
	Kind    string    `json:"kind"` // ServiceEndpoint or ServiceConfigured
	Home    string    `json:"home"`
	Online  bool      `json:"online"`
	Tools   []Tool    `json:"tools"`
	Created time.Time `json:"created,omitzero"`
	// Server is the program's own name and version (its MCP serverInfo),
	// once it has connected.
	Server string `json:"server,omitempty"`
	// Error says why a configured server is not connected.
	Error string `json:"error,omitempty"`
	// URL is the endpoint's URL with its token, given once, at creation.
	URL string `json:"url,omitempty"`
}

// ServiceCall asks a service to run one of its tools.
type ServiceCall struct {
	Service   string
	Tool      string
	Arguments json.RawMessage // a JSON object; empty or null means {}
	// Timeout for the answer; 0 means the default.
	Timeout time.Duration
	Caller  string // "api", "agent", "mcp", "voice"
}

// ServicePrefix starts the name under which an outside MCP service's
// calls are recorded in the call history (CallRecord.DeviceID
// "service:calc"); no device id may start with it (protocol refuses
// one), so that no device can pose as a service or read its calls.
const ServicePrefix = "service:"
