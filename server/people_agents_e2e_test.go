package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/catalog"
	"github.com/xiaozhi-hub/hub/server"
	"github.com/xiaozhi-hub/hub/sim"
)

// Two homes and three people, for the agent surfaces: alice owns home A,
// bob owns home B and is a guest in A, and the admin. lampA is in A, lampB
// in B.
type twoHomes struct {
	h            *testHub
	homeA, homeB string
	alice, bob   string // personal tokens
	lampA, lampB *sim.Device
}

const (
	lampAID = "aa:00:00:00:21:0a"
	lampBID = "aa:00:00:00:21:0b"
)

func startTwoHomes(t *testing.T, h *testHub) *twoHomes {
	t.Helper()
	ctx := context.Background()
	acc := server.AccountsOf(h.Hub)
	for _, name := range []string{"alice", "bob"} {
		if _, err := acc.AddUser(ctx, name, "password-of-"+name); err != nil {
			t.Fatal(err)
		}
	}
	alice, _ := acc.Principal("alice")
	bob, _ := acc.Principal("bob")
	a, err := acc.CreateHome(ctx, alice, "A家")
	if err != nil {
		t.Fatal(err)
	}
	b, err := acc.CreateHome(ctx, bob, "B家")
	if err != nil {
		t.Fatal(err)
	}
	if err := acc.SetMember(ctx, alice, a.ID, "bob", hub.RoleGuest); err != nil {
		t.Fatal(err)
	}
	w := &twoHomes{h: h, homeA: a.ID, homeB: b.ID}
	w.alice, _, err = acc.CreateToken(ctx, "alice", "script")
	if err != nil {
		t.Fatal(err)
	}
	w.bob, _, err = acc.CreateToken(ctx, "bob", "script")
	if err != nil {
		t.Fatal(err)
	}
	w.lampA = h.device(sim.Config{DeviceID: lampAID, Lamp: true})
	w.lampB = h.device(sim.Config{DeviceID: lampBID, Lamp: true})
	w.move(lampAID, w.homeA)
	w.move(lampBID, w.homeB)
	h.readyTools(lampAID)
	h.readyTools(lampBID)
	return w
}

// move puts a device in a home.
func (w *twoHomes) move(id, home string) {
	w.h.t.Helper()
	waitFor(w.h.t, id+" known", func() bool { _, err := w.h.Registry.Device(id); return err == nil })
	if _, err := w.h.Registry.UpdateDevice(context.Background(), id, hub.DevicePatch{Home: &home}); err != nil {
		w.h.t.Fatal(err)
	}
}

// mcpAs opens an MCP session at /mcp with token (the official Go SDK),
// with a handler of notifications/tools/list_changed if one is given.
func mcpAs(t *testing.T, h *testHub, token string, changed ...func(context.Context, *mcp.ToolListChangedRequest)) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	opts := &mcp.ClientOptions{}
	if len(changed) > 0 {
		opts.ToolListChangedHandler = changed[0]
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "people", Version: "1"}, opts).Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint: h.URL() + "/mcp", HTTPClient: &http.Client{Transport: bearer{token, http.DefaultTransport}},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func mcpTools(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, tl := range res.Tools {
		out = append(out, tl.Name)
	}
	return out
}

// mcpCall calls a tool and returns its text, and whether it failed (a
// tool error or a protocol error).
func mcpCall(cs *mcp.ClientSession, name string, args map[string]any) (string, bool) {
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return err.Error(), true
	}
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n"), res.IsError
}

var (
	lampAOn = catalog.Name(lampAID, "self.lamp.turn_on")
	lampBOn = catalog.Name(lampBID, "self.lamp.turn_on")
)

// seesOnlyA checks an MCP session that acts for alice: home A's lamp and
// nothing of home B, in the tool list, in search and in get_device, and a
// call of B's lamp fails as for a device that does not exist.
func seesOnlyA(t *testing.T, w *twoHomes, cs *mcp.ClientSession) {
	t.Helper()
	tools := mcpTools(t, cs)
	if !slices.Contains(tools, lampAOn) || slices.Contains(tools, lampBOn) {
		t.Fatalf("tools %v: want %s and not %s", tools, lampAOn, lampBOn)
	}
	if text, _ := mcpCall(cs, catalog.ToolSearchDevices, map[string]any{"query": ""}); strings.Contains(text, lampBID) || !strings.Contains(text, lampAID) {
		t.Fatalf("search_devices lists %s", text)
	}
	foreign, failed := mcpCall(cs, catalog.ToolGetDevice, map[string]any{"device_id": lampBID})
	unknown, _ := mcpCall(cs, catalog.ToolGetDevice, map[string]any{"device_id": "aa:00:00:00:21:ff"})
	if !failed || strings.ReplaceAll(foreign, lampBID, "X") != strings.ReplaceAll(unknown, "aa:00:00:00:21:ff", "X") {
		t.Fatalf("get_device of home B's lamp = %q; an unknown device = %q", foreign, unknown)
	}
	if text, failed := mcpCall(cs, lampBOn, nil); !failed {
		t.Fatalf("calling home B's lamp succeeded: %s", text)
	}
	if w.lampB.LampOn() {
		t.Fatal("home B's lamp was turned on")
	}
	if text, failed := mcpCall(cs, lampAOn, nil); failed || !w.lampA.LampOn() {
		t.Fatalf("calling home A's lamp: %s", text)
	}
}

// /mcp with a person's personal token offers only their homes' devices;
// bob, in both homes, sees both.
func TestPeopleMCPWithAPersonalTokenSeesOnlyItsHomes(t *testing.T) {
	w := startTwoHomes(t, startHub(t, "", nil))
	seesOnlyA(t, w, mcpAs(t, w.h, w.alice))
	if tools := mcpTools(t, mcpAs(t, w.h, w.bob)); !slices.Contains(tools, lampAOn) || !slices.Contains(tools, lampBOn) {
		t.Fatalf("bob's tools %v: want both lamps", tools)
	}
}

// An MCP client that alice approved acts as alice: her homes' devices
// only, and its grant is hers to list (bob sees none of it).
func TestPeopleMCPWithAnOAuthTokenActsForWhoApproved(t *testing.T) {
	h := startHub(t, "", nil)
	w := startTwoHomes(t, h)
	tok := oauthTokensAs(t, h, w.alice)
	seesOnlyA(t, w, mcpAs(t, h, tok["access_token"].(string)))

	clients := func(token string) []any {
		st, body := h.callWith(token, "GET", "/api/oauth/clients", nil)
		if st != 200 {
			t.Fatalf("GET /api/oauth/clients = %d %v", st, body)
		}
		cs, _ := body["clients"].([]any)
		return cs
	}
	if n := len(clients(w.bob)); n != 0 {
		t.Fatalf("bob sees %d of alice's clients", n)
	}
	mine := clients(w.alice)
	if len(mine) != 1 || jsonString(mine[0].(map[string]any)["grants"]) == "[]" || !strings.Contains(jsonString(mine), `"user":"alice"`) {
		t.Fatalf("alice's clients: %s", jsonString(mine))
	}
	if st, _ := h.callWith(w.bob, "DELETE", "/api/oauth/clients/"+tok["client_id"].(string), nil); st != 404 {
		t.Fatalf("bob revoking alice's client = %d", st)
	}
	if st, _ := h.callWith(w.bob, "GET", "/api/oauth/requests", nil); st != 403 {
		t.Fatalf("bob listing waiting authorizations = %d", st)
	}
	if st, _ := h.callWith(w.alice, "DELETE", "/api/oauth/clients/"+tok["client_id"].(string), nil); st != 204 {
		t.Fatalf("alice revoking her client = %d", st)
	}
	if st := mcpInitialize(t, h.URL(), tok["access_token"].(string)); st != 401 {
		t.Fatalf("/mcp with a revoked grant = %d", st)
	}
}

// Removing bob from home A takes A's tools from his open /mcp session at
// once: the next list lacks them and a call of A's lamp fails.
func TestPeopleMCPRemovedFromAHomeLosesItsToolsAtOnce(t *testing.T) {
	w := startTwoHomes(t, startHub(t, "", nil))
	changed := make(chan struct{}, 16)
	cs := mcpAs(t, w.h, w.bob, func(context.Context, *mcp.ToolListChangedRequest) {
		select {
		case changed <- struct{}{}:
		default:
		}
	})
	if tools := mcpTools(t, cs); !slices.Contains(tools, lampAOn) {
		t.Fatalf("bob's tools %v: want home A's lamp", tools)
	}
	for len(changed) > 0 {
		<-changed // any notice before the removal
	}
	acc := server.AccountsOf(w.h.Hub)
	alice, _ := acc.Principal("alice")
	if err := acc.RemoveMember(context.Background(), alice, w.homeA, "bob"); err != nil {
		t.Fatal(err)
	}
	// Told at once, before any request of his.
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("no notifications/tools/list_changed after bob left home A")
	}
	if tools := mcpTools(t, cs); slices.Contains(tools, lampAOn) || !slices.Contains(tools, lampBOn) {
		t.Fatalf("bob's tools after leaving home A: %v", tools)
	}
	if text, failed := mcpCall(cs, lampAOn, nil); !failed || w.lampA.LampOn() {
		t.Fatalf("bob called home A's lamp after leaving: %s", text)
	}
	// Someone else's credential cannot use bob's session.
	req, _ := http.NewRequest("POST", w.h.URL()+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":9,"method":"tools/list"}`))
	req.Header.Set("Authorization", "Bearer "+w.alice)
	req.Header.Set("Mcp-Session-Id", cs.ID())
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 404 {
		t.Fatalf("alice's token on bob's session = %d", res.StatusCode)
	}
	// Revoking bob's token ends his session's use at its next request.
	for _, tv := range acc.Tokens("bob") {
		if err := acc.RevokeToken(context.Background(), "bob", tv.ID); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cs.ListTools(context.Background(), nil); err == nil {
		t.Fatal("bob's session still lists tools after his token was revoked")
	}
}

// The built-in agent runs as the person who asks: its prompt and tools
// list only alice's devices, a model that asks for home B's lamp gets an
// error and the lamp stays off, and the run is alice's (bob does not see
// it; the admin does).
func TestPeopleAgentRunsAsTheAsker(t *testing.T) {
	p := newProviders(t, lampBOn)
	h := talkingHub(t, p, nil)
	w := startTwoHomes(t, h)
	st, rec := h.callWith(w.alice, "POST", "/api/agent/chat", map[string]any{"message": "打开B家的灯", "stream": false})
	if st != 200 {
		t.Fatalf("chat = %d %v", st, rec)
	}
	p.mu.Lock()
	system, tools, results := p.system, slices.Clone(p.tools), slices.Clone(p.results)
	p.mu.Unlock()
	if !strings.Contains(system, lampAID) || strings.Contains(system, lampBID) {
		t.Fatalf("alice's agent's system prompt:\n%s", system)
	}
	if !slices.Contains(tools, lampAOn) || slices.Contains(tools, lampBOn) {
		t.Fatalf("alice's agent's tools: %v", tools)
	}
	if len(results) != 1 || !strings.Contains(results[0], "not_found") {
		t.Fatalf("the model was told %q of its call of home B's lamp", results)
	}
	if w.lampB.LampOn() {
		t.Fatal("alice's agent turned on home B's lamp")
	}
	if rec["by"] != "agent for alice" || rec["user"] != "alice" {
		t.Fatalf("the run says it was by %v for %v", rec["by"], rec["user"])
	}
	runs := func(token string) int {
		st, body := h.callWith(token, "GET", "/api/agent/runs", nil)
		if st != 200 {
			t.Fatalf("runs = %d %v", st, body)
		}
		rs, _ := body["runs"].([]any)
		return len(rs)
	}
	if runs(w.bob) != 0 || runs(w.alice) != 1 || runs(h.Token) != 1 {
		t.Fatalf("runs seen: bob %d, alice %d, admin %d", runs(w.bob), runs(w.alice), runs(h.Token))
	}
	// bob naming alice's session starts a conversation of his own.
	p.mu.Lock()
	before := len(p.sent)
	p.mu.Unlock()
	st, again := h.callWith(w.bob, "POST", "/api/agent/chat", map[string]any{"message": "再说一遍", "session": rec["session"], "stream": false})
	p.mu.Lock()
	n := p.sent[before] // the first request of bob's run
	p.mu.Unlock()
	if st != 200 || n != 2 {
		t.Fatalf("bob in alice's session = %d %v; the model got %d messages (want system and his own)", st, again, n)
	}
}

// A device's voice acts with its home's rights, as the home is when the
// turn starts: spoken to a device in home A, a request the model turns
// into a call of home B's lamp fails; once the device is in home B, the
// same request turns it on.
func TestPeopleVoiceActsWithTheDevicesHome(t *testing.T) {
	const talkerID = "aa:00:00:00:21:0c"
	p := newProviders(t, lampBOn)
	h := talkingHub(t, p, nil)
	w := startTwoHomes(t, h)
	c := h.rawDevice(talkerID)
	w.move(talkerID, w.homeA)

	turn := func() {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		send(t, c, `{"session_id":"s","type":"listen","state":"start","mode":"manual"}`)
		for _, f := range speech(t) {
			if err := c.Write(ctx, 2, f); err != nil {
				t.Fatal(err)
			}
		}
		send(t, c, `{"session_id":"s","type":"listen","state":"stop"}`)
		for {
			typ, data, err := c.Read(ctx)
			if err != nil {
				t.Fatalf("read: %v", err)
			}
			if typ == 1 && strings.Contains(string(data), `"type":"tts","state":"stop"`) {
				return
			}
		}
	}
	turn()
	p.mu.Lock()
	system, results := p.system, slices.Clone(p.results)
	p.mu.Unlock()
	if strings.Contains(system, lampBID) || !strings.Contains(system, lampAID) {
		t.Fatalf("the voice of a device in home A was told of:\n%s", system)
	}
	if len(results) != 1 || !strings.Contains(results[0], "not_found") || w.lampB.LampOn() {
		t.Fatalf("a device in home A reached home B's lamp: results %q, lamp on %v", results, w.lampB.LampOn())
	}

	w.move(talkerID, w.homeB)
	turn()
	waitFor(t, "home B's lamp on, asked by a device in home B", w.lampB.LampOn)
	st, body := h.call("GET", "/api/calls?device="+lampBID, nil)
	if st != 200 || !strings.Contains(jsonString(body), `"voice of `+talkerID) {
		t.Fatalf("the call history of home B's lamp = %d %s", st, jsonString(body))
	}
}

func jsonString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
