// Package hub is the vocabulary of xiaozhi-hub: the devices it knows, the
// tools and IoT things they offer, the calls made to them and the events the
// hub reports. It does no I/O; the packages below it do:
//
//	protocol  the device wire protocol (envelopes, hello, audio frames, JSON-RPC)
//	iot       legacy IoT things: descriptors, state merging, command checks
//	mcpclient the hub's MCP client for one device connection
//	session   one device's WebSocket connection, from upgrade to close
//	registry  every device by id: live sessions, durable cache, calls, events
//	store     the SQLite cache behind the registry
//	api       the REST API, Server-Sent Events, health and metrics
//	sim       simulated devices that behave like the firmware
//	server    assembles all of the above from a Config
package hub

import (
	"encoding/json"
	"time"
)

// Device is what the hub knows about one device, keyed by its Device-Id
// (the MAC address on real firmware). It outlives connections.
type Device struct {
	ID       string `json:"id"`
	ClientID string `json:"clientId,omitempty"`

	// Given by people through the API.
	Name    string   `json:"name"`
	Room    string   `json:"room"`
	Aliases []string `json:"aliases"`
	// Voice is the speech synthesis voice of the device's answers ("": the
	// hub's tts-voice).
	Voice string `json:"voice,omitempty"`
	// Home is the id of the home the device belongs to ("": none yet; only
	// the admin sees it). See Principal for who sees what.
	Home string `json:"home,omitempty"`

	// Reported by the device.
	Board           string          `json:"board,omitempty"`    // serverInfo.name from initialize
	Firmware        string          `json:"firmware,omitempty"` // serverInfo.version from initialize
	ProtocolVersion int             `json:"protocolVersion"`    // binary audio framing, 1..3
	Features        json.RawMessage `json:"features,omitempty"` // hello "features" as sent
	MCP             bool            `json:"mcp"`                // speaks MCP (hello features.mcp)
	// Transport of its current or last connection since the hub started:
	// "websocket" or "mqtt" (not stored).
	Transport  string          `json:"transport,omitempty"`
	SystemInfo json.RawMessage `json:"systemInfo,omitempty"`

	FirstSeen time.Time `json:"firstSeen,omitzero"`
	LastSeen  time.Time `json:"lastSeen,omitzero"` // absent until the device first connects

	// Derived, filled in by the registry.
	Online bool `json:"online"`
	// Node is the hub node holding the device's connection when it is
	// another node of the cluster ("" for this hub, or no cluster).
	Node       string `json:"node,omitempty"`
	ToolCount  int    `json:"toolCount"`
	ThingCount int    `json:"thingCount"`
	ToolsHash  string `json:"toolsHash,omitempty"`
	ToolsStale bool   `json:"toolsStale"`
	// ToolsError says why fetching the tool list failed on the current
	// connection (and whether the hub still retries); empty once it worked.
	ToolsError string `json:"toolsError,omitempty"`
}

// DevicePatch is a change people make to a device. Nil fields are left alone.
type DevicePatch struct {
	Name    *string   `json:"name,omitempty"`
	Room    *string   `json:"room,omitempty"`
	Aliases *[]string `json:"aliases,omitempty"`
	Voice   *string   `json:"voice,omitempty"`
	// Home moves the device to another home. Never decoded from a request
	// body: only the admin (or binding by activation code) sets it.
	Home *string `json:"-"`
}

// Tool is one MCP tool a device offers, as the device described it.
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
	Annotations json.RawMessage `json:"annotations,omitempty"`
	// UserOnly tools carry annotations.audience ["user"] (reboot, firmware
	// upgrade, …): listed with withUserTools, never offered to AI agents by default.
	UserOnly bool `json:"userOnly"`
	// Unchecked, when set, says why the hub does not check arguments
	// against InputSchema (the schema is too large, too deep, recursive, or
	// refers outside itself): calls go to the device, which checks them.
	Unchecked string `json:"unchecked,omitempty"`
}

// ToolChange is the difference between two tool lists of one device.
type ToolChange struct {
	Added   []string `json:"added,omitempty"`
	Removed []string `json:"removed,omitempty"`
	Changed []string `json:"changed,omitempty"`
}

// Empty reports whether nothing changed.
func (c ToolChange) Empty() bool {
	return len(c.Added) == 0 && len(c.Removed) == 0 && len(c.Changed) == 0
}

// CallResult is what a device answered to tools/call.
type CallResult struct {
	Content json.RawMessage `json:"content"`
	IsError bool            `json:"isError"`
}

// CallRecord is one entry of the bounded history of calls made to devices.
type CallRecord struct {
	ID       int64  `json:"id"`
	DeviceID string `json:"deviceId"`
	Kind     string `json:"kind"` // "mcp" or "iot"
	Tool     string `json:"tool"` // tool name, or "Thing.Method[, …]" for IoT
	Caller   string `json:"caller"`
	// By says who caused the call (Principal.Actor): "alice", "alice (token
	// backup-script)", "Claude (OAuth) for alice", "agent for alice", "voice
	// of aa:bb:…", "admin"; "" in records made before people existed.
	By string `json:"by,omitempty"`
	// User is the person on whose behalf the call was made ("" for the
	// admin, a device's voice, or records made before people existed):
	// what a guest's view of the history is filtered by.
	User       string    `json:"user,omitempty"`
	Arguments  string    `json:"arguments"` // truncated JSON
	Result     string    `json:"result"`    // truncated JSON or error message
	Outcome    string    `json:"outcome"`   // an Outcome* constant
	Started    time.Time `json:"started"`
	DurationMs float64   `json:"durationMs"`
	// Node is the hub node that made the call, in a cluster.
	Node string `json:"node,omitempty"`
}

// Call outcomes, as recorded and as used for metrics labels.
const (
	OutcomeOK          = "ok"
	OutcomeToolError   = "tool_error" // the device returned isError:true
	OutcomeDeviceError = "device_error"
	OutcomeTimeout     = "timeout"
	OutcomeOffline     = "offline"
	OutcomeGone        = "disconnected"
	OutcomeInvalid     = "invalid"
	OutcomeSent        = "sent" // IoT commands: devices do not acknowledge
)

// CallFilter selects call records. Zero values select everything.
type CallFilter struct {
	DeviceID string
	Limit    int // at most this many, newest first; 0 means a default
	// Seen, when not nil, keeps one person's view of the history
	// (Principal.SeesCall): nothing else.
	Seen *SeenCalls
}

// SeenCalls is the part of the call history one person sees: every call
// of the devices in All, and the calls User made to the devices in Own (a
// guest's).
type SeenCalls struct {
	All, Own []string
	User     string
}

// Event is something the hub observed, streamed to API clients.
type Event struct {
	Type     string    `json:"type"` // an Event* constant
	DeviceID string    `json:"deviceId,omitempty"`
	Time     time.Time `json:"time"`
	Data     any       `json:"data,omitempty"`
	// Node is the hub node that recorded the event, in a cluster.
	Node string `json:"node,omitempty"`
	// By says who caused it, when a person or program did
	// (Principal.Actor); "" for what devices and the hub do themselves.
	By string `json:"by,omitempty"`
	// Home is the home of the device when the event was sent, for
	// filtering event streams by who may see them (Principal.Sees); never
	// encoded.
	Home string `json:"-"`
	// Left marks the device_deleted that tells the people of the home a
	// device left (Home) that it is gone for them: it went to the home
	// LeftFor ("" none). It is not recorded, and goes only to streams that
	// see Home but not LeftFor (the others get the device_updated). Never
	// encoded.
	Left    bool   `json:"-"`
	LeftFor string `json:"-"`
}

// Event types.
const (
	EventOnline        = "online"
	EventOffline       = "offline"
	EventToolsChanged  = "tools_changed"
	EventToolsError    = "tools_error"
	EventIoTChanged    = "iot_changed"
	EventCallFinished  = "call_finished"
	EventDeviceMessage = "device_message" // listen, abort, unknown types, notifications
	EventProtocolError = "protocol_error"
	EventDeviceDeleted = "device_deleted"
	EventDeviceUpdated = "device_updated"
	// EventIdentityRefused: an OTA check or a connection presented a
	// device's id with another Client-Id or serial number than the one the
	// device is bound to (a stranger, or a re-flashed device to re-bind).
	EventIdentityRefused = "identity_refused"
	// EventDeviceRebound: a person bound the device to a new identity.
	EventDeviceRebound = "device_rebound"
	// EventConnectionRefused: a transport refused a known device's
	// connection or message (MQTT: a login the device-auth policy refuses,
	// a publish to another device's topic).
	EventConnectionRefused = "connection_refused"
	// EventVoiceTurn: one spoken turn of a device (what was heard and
	// said, the outcome, the time of each stage).
	EventVoiceTurn = "voice_turn"
)

// Thing is one legacy IoT thing (firmware ≤ 1.7) with its last known state.
type Thing struct {
	Name        string                     `json:"name"`
	Description string                     `json:"description"`
	Properties  map[string]ThingProperty   `json:"properties"`
	Methods     map[string]ThingMethod     `json:"methods"`
	State       map[string]json.RawMessage `json:"state"`
	// StateUpdated is when the device last reported any of State.
	StateUpdated time.Time `json:"stateUpdated,omitzero"`
}

// ThingProperty is a readable value of a thing.
type ThingProperty struct {
	Description string `json:"description"`
	Type        string `json:"type"` // "boolean", "number" or "string"
}

// ThingMethod is a callable method of a thing; its parameters are all
// required (the wire format has no required flag, and the firmware ignores
// commands that miss one).
type ThingMethod struct {
	Description string                   `json:"description"`
	Parameters  map[string]ThingProperty `json:"parameters"`
}

// IoTCommand is one command for a legacy device.
type IoTCommand struct {
	Name       string          `json:"name"`
	Method     string          `json:"method"`
	Parameters json.RawMessage `json:"parameters,omitempty"`
}

// Truncate returns b as a string of at most n bytes (cut at a character
// boundary, "…" appended when cut), for logs and call records.
func Truncate(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	for n > 0 && b[n]&0xC0 == 0x80 { // do not split a UTF-8 sequence
		n--
	}
	return string(b[:n]) + "…"
}

// Snapshot is one device as stored: what a durable cache gives back to the
// registry when the hub starts.
type Snapshot struct {
	Device    Device
	ToolsHash string
	Tools     []Tool
	Things    []Thing
	// ToolsSaved is when the tool list was last written.
	ToolsSaved time.Time
}
