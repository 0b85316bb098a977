package server_test

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/xiaozhi-hub/hub/catalog"
	"github.com/xiaozhi-hub/hub/server"
	"github.com/xiaozhi-hub/hub/sim"
)

// historyOf lists a device's calls and events on one node by the node
// that recorded each: "call hub-1", "online hub-1", "device_updated hub-2".
func historyOf(c *clusterNode, id string) map[string]int {
	out := map[string]int{}
	_, calls := c.call("GET", "/api/calls?device="+id, nil)
	for _, x := range calls["calls"].([]any) {
		out["call "+x.(map[string]any)["node"].(string)]++
	}
	_, evs := c.call("GET", "/api/devices/"+id+"/events", nil)
	for _, x := range evs["events"].([]any) {
		e := x.(map[string]any)
		node, _ := e["node"].(string)
		out[e["type"].(string)+" "+node]++
	}
	return out
}

// The history is one stream: every node lists every node's calls and
// events, each once, naming the node that recorded it; a node that was
// away catches up when it is back, and a dead node's records stay listed.
func TestClusterHistoryIsOneStream(t *testing.T) {
	nodes := startCluster(t, 3)
	d := connectTo(t, nodes[0], sim.Config{DeviceID: "aa:00:00:00:0c:71", Lamp: true})
	waitServed(t, nodes, d.ID()) // each node calls it
	tool := lampTool(t, nodes[2], d.ID())
	call := func(c *clusterNode) {
		t.Helper()
		if st, body := c.call("POST", "/api/devices/"+d.ID()+"/tools/"+tool+"/call", map[string]any{"arguments": map[string]any{}}); st != 200 {
			t.Fatalf("call from %s = %d %v", c.name, st, body)
		}
	}
	call(nodes[0])
	call(nodes[1])
	if st, body := nodes[1].call("PATCH", "/api/devices/"+d.ID(), map[string]any{"room": "书房"}); st != 200 {
		t.Fatalf("rename on hub-2 = %d %v", st, body)
	}
	var last map[string]int
	defer func() {
		if t.Failed() {
			t.Logf("the history last listed: %v", last)
		}
	}()
	for _, c := range nodes {
		waitLong(t, "the whole history on "+c.name, func() bool {
			last = historyOf(c, d.ID())
			return last["call hub-1"] == 1 && last["call hub-2"] == 1 && last["device_updated hub-2"] == 1
		})
		h := historyOf(c, d.ID())
		if h["online hub-1"] != 1 || h["online hub-2"]+h["online hub-3"] != 0 || h["device_updated hub-1"]+h["device_updated hub-3"] != 0 {
			t.Fatalf("%s lists %v: the device came online on hub-1 and was renamed on hub-2, each recorded once", c.name, h)
		}
	}

	// hub-3 is away while hub-1 and hub-2 make calls: back, it has them.
	cfg := nodes[2].Config()
	nodes[2].stop()
	call(nodes[0])
	call(nodes[1])
	back, err := openNode(t, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(back.stop)
	nodes[2] = back
	waitLong(t, "hub-3 to catch up with the calls made while it was away", func() bool {
		last = historyOf(back, d.ID())
		return last["call hub-1"] == 2 && last["call hub-2"] == 2
	})

	// hub-1 dies: what it recorded is still listed on the others, and the
	// device's going, which hub-1 could not record, is recorded once, by
	// one of the others.
	nodes[0].Crash()
	for _, c := range nodes[1:] {
		if h := historyOf(c, d.ID()); h["call hub-1"] != 2 || h["online hub-1"] != 1 {
			t.Fatalf("after hub-1's death %s lists %v; want hub-1's two calls and its online event", c.name, h)
		}
	}
	for _, c := range nodes[1:] {
		waitLong(t, "the device's going recorded once, on "+c.name, func() bool {
			last = historyOf(c, d.ID())
			return last["offline hub-2"]+last["offline hub-3"] == 1
		})
	}
	// A second record of the going would come from a node that has taken
	// the device for offline; once both have, a change made on each after
	// that is a marker in the one stream: when both markers are listed
	// everywhere, so would be any record made before them.
	for _, c := range nodes[1:] {
		waitLong(t, "the device offline on "+c.name, func() bool { return c.device(d.ID())["online"] == false })
	}
	for _, c := range nodes[1:] {
		if st, body := c.call("PATCH", "/api/devices/"+d.ID(), map[string]any{"room": "marker " + c.name}); st != 200 {
			t.Fatalf("rename on %s = %d %v", c.name, st, body)
		}
	}
	for _, c := range nodes[1:] {
		waitLong(t, "both markers on "+c.name, func() bool {
			last = historyOf(c, d.ID())
			return last["device_updated hub-2"] == 2 && last["device_updated hub-3"] == 1
		})
	}
	for _, c := range nodes[1:] {
		if h := historyOf(c, d.ID()); h["offline hub-2"]+h["offline hub-3"] != 1 || h["offline hub-1"] != 0 {
			t.Fatalf("%s lists the device's going %v", c.name, h)
		}
	}
}

// An MCP client authorized through one node is one client of the whole
// cluster: its token opens /mcp on every node, a refresh works on another
// node, and a revocation on a third holds everywhere.
func TestClusterSharesOAuthClients(t *testing.T) {
	nodes := startCluster(t, 3)
	tok := oauthTokens(t, nodes[0].testHub)
	access, refresh, client := tok["access_token"].(string), tok["refresh_token"].(string), tok["client_id"].(string)
	for _, c := range nodes {
		waitFor(t, "the token to open /mcp on "+c.name, func() bool { return mcpInitialize(t, c.URL(), access) == 200 })
	}
	again := tokenRequest(t, nodes[1].URL(), url.Values{"grant_type": {"refresh_token"}, "client_id": {client}, "refresh_token": {refresh}})
	fresh, _ := again["access_token"].(string)
	if fresh == "" {
		t.Fatalf("refresh on hub-2 of a token from hub-1: %v", again)
	}
	waitFor(t, "the refreshed token on hub-3", func() bool { return mcpInitialize(t, nodes[2].URL(), fresh) == 200 })
	if st, body := nodes[2].call("DELETE", "/api/oauth/clients/"+client, nil); st != 204 && st != 200 {
		t.Fatalf("revoke on hub-3 = %d %v", st, body)
	}
	for _, c := range nodes {
		waitFor(t, "the revocation on "+c.name, func() bool { return mcpInitialize(t, c.URL(), fresh) == 401 })
	}
	// A node that restarts does not bring the revoked client back.
	cfg := nodes[0].Config()
	nodes[0].stop()
	back, err := openNode(t, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(back.stop)
	if st := mcpInitialize(t, back.URL(), fresh); st != 401 {
		t.Fatalf("after a restart hub-1 lets the revoked client in: %d", st)
	}
	if st, body := back.call("GET", "/api/oauth/clients", nil); st != 200 || strings.Contains(fmt.Sprint(body), client) {
		t.Fatalf("after a restart hub-1 lists %v", body)
	}
}

// A conversation with the agent goes on on another node: a person whose
// next request the load balancer sends elsewhere (or whose node died) is
// still understood in context.
func TestClusterAgentConversationGoesOnOnAnotherNode(t *testing.T) {
	const lampID = "aa:00:00:00:ca:01"
	p := newProviders(t, catalog.Name(lampID, "self.lamp.turn_on"))
	nodes := startCluster(t, 2, func(c *server.Config) {
		c.AgentProvider, c.AgentBaseURL, c.AgentAPIKey, c.AgentModel = "openai", p.srv.URL+"/v1", "sk-test", "test-model"
	})
	d := connectTo(t, nodes[0], sim.Config{DeviceID: lampID, Lamp: true})
	waitFor(t, "the lamp's tools on both nodes", func() bool {
		return lampTool(t, nodes[0], d.ID()) != "" && lampTool(t, nodes[1], d.ID()) != ""
	})
	chat := func(c *clusterNode) []int {
		t.Helper()
		p.mu.Lock()
		before := len(p.sent)
		p.mu.Unlock()
		if st, body := c.call("POST", "/api/agent/chat", map[string]any{"message": "打开客厅的灯", "session": "living-room"}); st != 200 {
			t.Fatalf("chat on %s: %d %v", c.name, st, body)
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		return slices.Clone(p.sent[before:])
	}
	if sent := chat(nodes[0]); len(sent) != 2 || sent[0] != 2 {
		t.Fatalf("first run on hub-1 sent %v messages to the model; want [2 4] (system and the question, then the tool's result)", sent)
	}
	// The run's four messages (question, tool call, result, answer) come
	// with the next question, on the other node.
	if sent := chat(nodes[1]); len(sent) == 0 || sent[0] != 6 {
		t.Fatalf("the same session on hub-2 sent %v messages first; want 6 (the conversation so far and the new question)", sent)
	}
	if !d.LampOn() {
		t.Fatal("the lamp is off")
	}
}
