package api

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"sync"
)

// The OpenAPI 3.1 description of the API, served at GET /api/openapi.json
// (behind the token, like every /api route: it reveals no secret, but the
// rule has no exceptions). Each operation is described once, here, by its
// method and pattern; TestOpenAPIDescribesEveryRoute fails when a route
// is registered without a description or a description has no route.

type op struct {
	summary string
	query   []param
	body    string // example request body (JSON), "" for none
	answer  string // what a 2xx answer holds, in words
	status  string // the success status (default "200")
	stream  bool   // text/event-stream
}

type param struct{ name, schema, desc string }

var limitParam = param{"limit", "integer", "how many to return at most"}

// operations is keyed by "METHOD /pattern", as the routes are registered.
var operations = map[string]op{
	"GET /api/devices": {summary: "List devices with their online state, tool and thing counts",
		query:  []param{{"online", "boolean", "only online (true) or offline (false) devices"}, {"room", "string", "only devices in this room"}, {"q", "string", "ranked search over names, rooms, aliases, tools and things"}},
		answer: `{"devices":[Device…]}`},
	"GET /api/devices/{id}":    {summary: "One device", answer: "Device"},
	"PATCH /api/devices/{id}":  {summary: "Name a device, put it in a room, give it aliases or a voice", body: `{"name":"Desk lamp","room":"Study","aliases":["lamp"],"voice":"nova"}`, answer: "the updated Device"},
	"DELETE /api/devices/{id}": {summary: "Forget a device with its tools, calls and events; revokes its tokens", status: "204", answer: "nothing"},
	"GET /api/devices/{id}/tools": {summary: "The device's cached MCP tools (stale: true while being re-listed)",
		query: []param{{"audience", "string", "agent: leave out user-only tools"}}, answer: `{"tools":[…],"stale":bool}`},
	"GET /api/devices/{id}/iot":           {summary: "The device's legacy IoT things with their last state", answer: `{"things":[…]}`},
	"POST /api/devices/{id}/iot/commands": {summary: "Send IoT commands (not acknowledged by legacy firmware)", body: `{"commands":[{"name":"Lamp","method":"TurnOn","parameters":{}}]}`, status: "202", answer: `{"sent":n,"note":"…"}`},
	"POST /api/devices/{id}/tools/{tool}/call": {summary: "Call a device tool; arguments are checked against its inputSchema first",
		body: `{"arguments":{"volume":40},"timeoutMs":30000}`, answer: `{"result":{…MCP CallToolResult},"isError":bool,"durationMs":…}`},
	"GET /api/devices/{id}/events": {summary: "The device's recent events", query: []param{limitParam}, answer: `{"events":[Event…]}`},
	"GET /api/calls": {summary: "Call history, newest first",
		query: []param{{"device", "string", "one device's calls"}, limitParam}, answer: `{"calls":[CallRecord…]}`},
	"GET /api/events": {summary: "Server-Sent Events of every device event (online, offline, tools_changed, call_finished, …)",
		query: []param{{"device", "string", "one device's events"}}, stream: true, answer: "event: <type>\\ndata: Event"},
	"GET /api/activations":                  {summary: "Activation codes waiting for a person, oldest first", answer: `{"activations":[…],"policy":"activation|token|open"}`},
	"POST /api/activations/{code}/approve":  {summary: "Approve the device showing this code, and label it", body: `{"name":"Kitchen speaker","room":"kitchen"}`, answer: `{"activation":{…},"trust":{…}}`},
	"GET /api/devices/{id}/trust":           {summary: "Approval, bound identity, revocation, MQTT choice and last OTA check of a device", answer: "Trust with admitted (a known device that never made an OTA check here has the empty record; 404 for an unknown device)"},
	"DELETE /api/devices/{id}/token":        {summary: "Revoke the device's tokens (and MQTT login); its connection closes", answer: `{"deviceId","revoked"}`},
	"POST /api/devices/{id}/token/revoke":   {summary: "The same as DELETE /api/devices/{id}/token", answer: `{"deviceId","revoked"}`},
	"POST /api/devices/{id}/rebind":         {summary: "Bind a re-flashed device to its new Client-Id", body: `{"clientId":"…","serialNumber":"…"}`, answer: `{"deviceId","clientId","serialNumber"}`},
	"PUT /api/devices/{id}/transport":       {summary: "Keep a device on WebSocket when the hub offers MQTT, or follow the hub (from its next boot)", body: `{"transport":"websocket"}`, answer: `{"deviceId","transport"}`},
	"GET /api/oauth/requests":               {summary: "MCP clients waiting for a person to let them use /mcp (OAuth authorizations), oldest first", answer: `{"requests":[{id,clientId,clientName,redirect,address,created,expires}…]}`},
	"POST /api/oauth/requests/{id}/approve": {summary: "Let the MCP client of this authorization use /mcp: its browser is sent back with a code", answer: `{"request":{…},"approved":true}`},
	"POST /api/oauth/requests/{id}/deny":    {summary: "Refuse this authorization: the client gets access_denied", answer: `{"request":{…},"approved":false}`},
	"GET /api/oauth/clients":                {summary: "Registered MCP clients with their grants (approved, token expiries, last use)", answer: `{"clients":[{id,name,redirectUris,registered,grants:[…]}…]}`},
	"DELETE /api/oauth/clients/{id}":        {summary: "Revoke an MCP client: its tokens stop working at once and it must be approved again", status: "204", answer: "nothing"},
	"POST /api/agent/chat": {summary: "Ask the built-in agent; Server-Sent Events of its steps (tool_call, tool_result, text, done, error)",
		body: `{"message":"打开客厅的灯","session":"…"}`, stream: true, answer: "event: <type>\\ndata: agent Event"},
	"GET /api/agent/runs":   {summary: "Recent agent runs with their tool calls, durations and outcome", query: []param{limitParam}, answer: `{"runs":[…]}`},
	"GET /api/openapi.json": {summary: "This document", answer: "OpenAPI 3.1"},
	"POST /api/login": {summary: "Log in with a user's name and password (no token); with cookie:true the token goes into the HttpOnly cookie xzh_session instead of the answer. 401 the same for an unknown name and a wrong password; 429 with Retry-After after repeated failures",
		body: `{"name":"alice","password":"…","cookie":false}`, answer: `{"token":"xzu_…","id","user":"alice","expires"}`},
	"POST /api/logout":                              {summary: "End the login (or personal token) this request used; clears the cookie", status: "204", answer: "nothing"},
	"GET /api/me":                                   {summary: "Who the caller is, with their homes", answer: `{"user":"alice","admin":false,"actor":"alice","homes":[HomeView…]}`},
	"GET /api/users":                                {summary: "Every user with their homes (admin)", answer: `{"users":[{name,created,homes}…]}`},
	"POST /api/users":                               {summary: "Make a user (admin); 409 for a name taken, 422 for a password under 8 characters", body: `{"name":"alice","password":"at least 8 characters"}`, status: "201", answer: `{"name","created","homes":[]}`},
	"DELETE /api/users/{name}":                      {summary: "Remove a user (admin): their tokens and places in homes end at once", status: "204", answer: "nothing"},
	"PUT /api/users/{name}/password":                {summary: "Set a password (admin), or change one's own with the current one; the user's other logins end", body: `{"current":"…","password":"…"}`, status: "204", answer: "nothing"},
	"GET /api/tokens":                               {summary: "The caller's logins and personal tokens (never their secrets)", answer: `{"tokens":[{id,kind,name,created,expires}…]}`},
	"POST /api/tokens":                              {summary: "Make a named personal token for scripts; its secret is shown this once", body: `{"name":"backup-script"}`, status: "201", answer: `{"token":"xzu_…","id","kind":"personal","name","created"}`},
	"DELETE /api/tokens/{id}":                       {summary: "Revoke one of the caller's tokens: it stops working at once, open event streams included", status: "204", answer: "nothing"},
	"GET /api/homes":                                {summary: "The caller's homes with their role (the admin: every home)", answer: `{"homes":[{id,name,role,created,members,devices}…]}`},
	"POST /api/homes":                               {summary: "Make a home (a user, who becomes its owner)", body: `{"name":"A家"}`, status: "201", answer: "HomeView"},
	"GET /api/homes/{home}":                         {summary: "One of the caller's homes", answer: "HomeView"},
	"PATCH /api/homes/{home}":                       {summary: "Rename a home (owner)", body: `{"name":"A家"}`, answer: "HomeView"},
	"DELETE /api/homes/{home}":                      {summary: "Delete a home (owner); 409 while devices are in it", status: "204", answer: "nothing"},
	"POST /api/homes/{home}/members":                {summary: "Add a person to a home or change their role (owner): owner, member or guest", body: `{"user":"bob","role":"member"}`, answer: "HomeView"},
	"DELETE /api/homes/{home}/members/{user}":       {summary: "Remove a person from a home (owner), or leave it oneself; their access ends at once", status: "204", answer: "nothing"},
	"POST /api/homes/{home}/devices":                {summary: "Add a device to a home (owner or member) by the activation code it shows, which approves it; the admin may send {\"device\":\"<id>\"} to move any device there", body: `{"code":"123456"}`, answer: "Device"},
	"DELETE /api/homes/{home}/devices/{id}":         {summary: "Take a device out of a home (owner): then only the admin sees it", status: "204", answer: "nothing"},
	"GET /api/cluster":                              {summary: "The cluster's nodes alive and the devices online through each (a hub alone: clustered false)", answer: `{"clustered":true,"node":"hub-1","nats":"CONNECTED","historyUnshared":0,"nodes":[{"name":"hub-1","self":true,"devicesOnline":3}]}`},
	"GET /healthz":                                  {summary: "Liveness and the store's health (no token)", answer: `{"status":"ok"}`},
	"GET /metrics":                                  {summary: "Prometheus metrics (no token; no device ids)", answer: "Prometheus text format"},
	"POST /mcp":                                     {summary: "The MCP server for outside agents (Streamable HTTP)", answer: "JSON-RPC"},
	"GET /mcp":                                      {summary: "The MCP server's stream of notifications", stream: true, answer: "Server-Sent Events"},
	"DELETE /mcp":                                   {summary: "End an MCP session (Mcp-Session-Id)", answer: "nothing"},
	"GET /.well-known/oauth-protected-resource/mcp": {summary: "Where MCP clients get a token for /mcp (RFC 9728; no token; also without /mcp)", answer: `{"resource","authorization_servers",…}`},
	"GET /.well-known/oauth-authorization-server":   {summary: "The hub's OAuth authorization server (RFC 8414; no token)", answer: `{"issuer","authorization_endpoint","token_endpoint","registration_endpoint",…}`},
	"POST /oauth/register":                          {summary: "Dynamic client registration (RFC 7591; no token; grants nothing until a person allows it)", body: `{"client_name":"Claude","redirect_uris":["https://claude.ai/api/mcp/auth_callback"],"token_endpoint_auth_method":"none"}`, status: "201", answer: `{"client_id",…}`},
	"GET /oauth/authorize":                          {summary: "Start an authorization (code, PKCE S256): sends the browser to the consent page", status: "302", answer: "a redirect"},
	"POST /oauth/token":                             {summary: "Exchange a code (with its PKCE verifier) or a refresh token for tokens (form-encoded)", answer: `{"access_token","token_type":"Bearer","expires_in","refresh_token","scope":"mcp"}`},
	"POST /oauth/revoke":                            {summary: "Revoke a token and its grant (RFC 7009, form-encoded)", answer: "nothing"},
	"GET /xiaozhi/v1/":                              {summary: "The device endpoint (WebSocket; Device-Id, Client-Id, Protocol-Version, Authorization headers)", status: "101", answer: "the device protocol (docs/protocol.md)"},
	"POST /xiaozhi/ota/":                            {summary: "The OTA check devices make at boot (no token)", answer: "server time, websocket (and mqtt) settings, activation code, firmware offer"},
	"POST /xiaozhi/ota/activate":                    {summary: "A device polls for its approval (no token)", answer: "200 approved, 202 pending"},
}

var pathParam = regexp.MustCompile(`\{([a-z]+)\$?\}`)

// openAPI builds the document; it is the same for every request.
var openAPI = sync.OnceValue(func() []byte {
	errorResp := map[string]any{"description": "an error: a status from the API's one table and {\"error\":{\"code\",\"message\"}} saying what to do",
		"content": map[string]any{"application/json": map[string]any{"schema": map[string]any{"$ref": "#/components/schemas/Error"}}}}
	paths := map[string]map[string]any{}
	for key, o := range operations {
		method, pattern, _ := strings.Cut(key, " ")
		path := strings.ReplaceAll(pattern, "{$}", "")
		var params []any
		for _, m := range pathParam.FindAllStringSubmatch(path, -1) {
			params = append(params, map[string]any{"name": m[1], "in": "path", "required": true, "schema": map[string]any{"type": "string"}})
		}
		for _, q := range o.query {
			params = append(params, map[string]any{"name": q.name, "in": "query", "description": q.desc, "schema": map[string]any{"type": q.schema}})
		}
		status := o.status
		if status == "" {
			status = "200"
		}
		ctype := "application/json"
		if o.stream {
			ctype = "text/event-stream"
		}
		ok := map[string]any{"description": o.answer}
		if status != "204" && status != "101" {
			ok["content"] = map[string]any{ctype: map[string]any{}}
		}
		operation := map[string]any{"summary": o.summary, "responses": map[string]any{status: ok, "default": errorResp}}
		if len(params) > 0 {
			operation["parameters"] = params
		}
		if o.body != "" {
			var example any
			_ = json.Unmarshal([]byte(o.body), &example)
			operation["requestBody"] = map[string]any{"required": true, "content": map[string]any{"application/json": map[string]any{"example": example}}}
		}
		if (strings.HasPrefix(path, "/api/") || path == "/mcp") && path != "/api/login" {
			operation["security"] = []any{map[string]any{"bearer": []any{}}}
		} else {
			operation["security"] = []any{}
		}
		if paths[path] == nil {
			paths[path] = map[string]any{}
		}
		paths[path][strings.ToLower(method)] = operation
	}
	doc := map[string]any{
		"openapi": "3.1.0",
		"info": map[string]any{"title": "xiaozhi-hub", "version": "1",
			"description": "Control xiaozhi-esp32 voice devices: their cached MCP tools and IoT things, calls, events, trust, the built-in agent. Every /api route but POST /api/login, and /mcp, need a token (Authorization: Bearer …): the admin token, or a user's (POST /api/login; the dashboard's cookie xzh_session, with the header X-XZH-CSRF: 1 on requests that change something). A user sees only the devices of their homes: any other device is answered as unknown."},
		"paths": paths,
		"components": map[string]any{
			"securitySchemes": map[string]any{"bearer": map[string]any{"type": "http", "scheme": "bearer"}},
			"schemas": map[string]any{"Error": map[string]any{"type": "object", "required": []any{"error"},
				"properties": map[string]any{"error": map[string]any{"type": "object", "required": []any{"code", "message"},
					"properties": map[string]any{"code": map[string]any{"type": "string"}, "message": map[string]any{"type": "string"}}}}}},
		},
	}
	b, _ := json.MarshalIndent(doc, "", " ")
	return b
})

func (s *Server) serveOpenAPI(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(openAPI())
}
