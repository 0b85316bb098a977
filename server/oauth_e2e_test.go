package server_test

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xiaozhi-hub/hub/server"
	"github.com/xiaozhi-hub/hub/sim"
)

// sdkClient is the official MCP TypeScript SDK client
// (mcpserver/testdata/client.mjs) in its OAuth mode: no token, only the
// hub's URL, as Claude or the MCP Inspector start.
type sdkClient struct {
	t   *testing.T
	in  io.WriteCloser
	out *bufio.Scanner
}

func startSDKClient(t *testing.T, mcpURL string) *sdkClient {
	t.Helper()
	skip := t.Skip
	if os.Getenv("CI") != "" {
		skip = t.Fatal
	}
	node, err := exec.LookPath("node")
	if err != nil {
		skip("node is not installed; the MCP TypeScript SDK test needs Node.js")
	}
	dir := filepath.Join("..", "mcpserver", "testdata")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk")); err != nil {
		skip("mcpserver/testdata/node_modules is missing: run `npm ci` there")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	cmd := exec.CommandContext(ctx, node, "client.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "MCP_URL="+mcpURL, "MCP_TOKEN=")
	cmd.Stderr = os.Stderr
	in, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		in.Close()
		_ = cmd.Wait()
		cancel()
	})
	c := &sdkClient{t: t, in: in, out: bufio.NewScanner(stdout)}
	c.out.Buffer(nil, 4<<20)
	return c
}

func (c *sdkClient) read() map[string]any {
	c.t.Helper()
	if !c.out.Scan() {
		c.t.Fatalf("the SDK client ended: %v", c.out.Err())
	}
	var m map[string]any
	if err := json.Unmarshal(c.out.Bytes(), &m); err != nil {
		c.t.Fatalf("the SDK client said %s", c.out.Bytes())
	}
	return m
}

func (c *sdkClient) send(cmd map[string]any) {
	c.t.Helper()
	b, _ := json.Marshal(cmd)
	if _, err := c.in.Write(append(b, '\n')); err != nil {
		c.t.Fatal(err)
	}
}

var noFollow = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// openAuthorization does what the person's browser does with the URL the
// client opened: the hub answers with its consent page for a request id.
func openAuthorization(t testing.TB, hubURL, authURL string) string {
	t.Helper()
	if !strings.HasPrefix(authURL, hubURL+"/oauth/authorize?") {
		t.Fatalf("the client was sent to %s; want the hub's /oauth/authorize", authURL)
	}
	res, err := noFollow.Get(authURL)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	_, id, ok := strings.Cut(res.Header.Get("Location"), "/oauth/consent#")
	if res.StatusCode != http.StatusFound || !ok {
		t.Fatalf("GET %s = %d to %q; want the consent page", authURL, res.StatusCode, res.Header.Get("Location"))
	}
	return id
}

// The whole MCP authorization flow with the official TypeScript SDK's own
// OAuth support, the admin approving in the hub, then calls, then the
// admin revoking the client.
func TestMCPClientAuthorizesWithOAuth(t *testing.T) {
	h := startHub(t, "", nil)
	d := h.device(sim.Config{DeviceID: "aa:00:00:00:0a:01", Lamp: true})
	h.readyTools(d.ID())

	c := startSDKClient(t, h.URL()+"/mcp")
	// 1. /mcp says 401 with resource_metadata; the SDK discovers the hub's
	// authorization server, registers itself and opens the authorization.
	m := c.read()
	authURL, _ := m["authorize"].(string)
	if authURL == "" {
		t.Fatalf("the SDK client did not start an authorization: %v", m)
	}
	q, _ := url.Parse(authURL)
	if q.Query().Get("code_challenge_method") != "S256" || q.Query().Get("resource") != h.URL()+"/mcp" {
		t.Fatalf("authorization URL %s lacks PKCE or the resource", authURL)
	}
	id := openAuthorization(t, h.URL(), authURL)

	// 2. The admin sees who asks, and approves.
	st, list := h.call("GET", "/api/oauth/requests", nil)
	reqs, _ := list["requests"].([]any)
	if st != 200 || len(reqs) != 1 || reqs[0].(map[string]any)["clientName"] != "xiaozhi-hub-node-test" {
		t.Fatalf("GET /api/oauth/requests = %d %v", st, list)
	}
	if st, body := h.callWith("", "POST", "/api/oauth/requests/"+id+"/approve", nil); st != 401 {
		t.Fatalf("approving without the admin token = %d %v", st, body)
	}
	if st, body := h.call("POST", "/api/oauth/requests/"+id+"/approve", nil); st != 200 {
		t.Fatalf("approve = %d %v", st, body)
	}

	// 3. The consent page sends the browser back with a code.
	st, state := callURL(t, "", "GET", h.URL()+"/oauth/requests/"+id)
	next, _ := url.Parse(state["next"].(string))
	if st != 200 || state["status"] != "approved" || next.Query().Get("code") == "" {
		t.Fatalf("request state = %d %v", st, state)
	}
	c.send(map[string]any{"op": "code", "code": next.Query().Get("code")})
	if m := c.read(); m["connected"] != true {
		t.Fatalf("after the code the SDK client says %v", m)
	}

	// 4. It uses the devices like any MCP client.
	c.send(map[string]any{"op": "list"})
	tools, _ := c.read()["tools"].([]any)
	var lamp string
	for _, tl := range tools {
		if n := tl.(map[string]any)["name"].(string); strings.Contains(n, "lamp") && strings.Contains(n, "turn_on") {
			lamp = n
		}
	}
	if lamp == "" {
		t.Fatalf("the OAuth client sees no lamp tool: %v", tools)
	}
	c.send(map[string]any{"op": "call", "name": lamp, "arguments": map[string]any{}})
	if r := c.read(); r["result"] == nil || r["result"].(map[string]any)["isError"] == true {
		t.Fatalf("call %s = %v", lamp, r)
	}
	waitFor(t, "the lamp to be on", func() bool { return d.LampOn() })
	st, cl := h.call("GET", "/api/oauth/clients", nil)
	clients, _ := cl["clients"].([]any)
	if st != 200 || len(clients) != 1 || len(clients[0].(map[string]any)["grants"].([]any)) != 1 {
		t.Fatalf("GET /api/oauth/clients = %d %v", st, cl)
	}
	clientID := clients[0].(map[string]any)["id"].(string)

	// 5. Revoked: the next request is refused, and the SDK has to ask again.
	if st, body := h.call("DELETE", "/api/oauth/clients/"+clientID, nil); st != 204 {
		t.Fatalf("revoke = %d %v", st, body)
	}
	c.send(map[string]any{"op": "list"})
	again := ""
	for {
		m := c.read()
		if u, ok := m["authorize"].(string); ok {
			again = u // the SDK re-registers and asks a person again
			continue
		}
		if m["error"] == nil || m["unauthorized"] != true {
			t.Fatalf("a revoked client listed tools: %v", m)
		}
		break
	}
	if again == "" {
		t.Fatal("after revocation the SDK did not ask for a new authorization")
	}
	openAuthorization(t, h.URL(), again)
	if _, pending := h.call("GET", "/api/oauth/requests", nil); len(pending["requests"].([]any)) != 1 {
		t.Fatalf("after revocation the client should be waiting for approval again: %v", pending)
	}
}

// An OAuth access token opens /mcp and nothing else; /mcp's 401 points at
// the metadata; the admin token still works at /mcp for scripts.
func TestOAuthTokensAreScopedToMCP(t *testing.T) {
	h := startHub(t, "", nil)
	base := h.URL()

	res, err := http.Post(base+"/mcp", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if want := `resource_metadata="` + base + `/.well-known/oauth-protected-resource/mcp"`; res.StatusCode != 401 || !strings.Contains(res.Header.Get("WWW-Authenticate"), want) {
		t.Fatalf("/mcp without a token = %d, WWW-Authenticate %q; want 401 naming %s", res.StatusCode, res.Header.Get("WWW-Authenticate"), want)
	}

	tok := oauthTokens(t, h)
	access := tok["access_token"].(string)
	for _, tc := range []struct {
		token string
		want  int
	}{{access, 200}, {h.Token, 200}, {"xzh_at_forged", 401}} {
		if st := mcpInitialize(t, base, tc.token); st != tc.want {
			t.Errorf("/mcp initialize with %.10s… = %d; want %d", tc.token, st, tc.want)
		}
	}
	if st, body := h.callWith(access, "GET", "/api/devices", nil); st != 401 {
		t.Fatalf("an OAuth token opened /api: %d %v", st, body)
	}
}

// oauthTokens does what an MCP client does at h (register, authorize, a
// person's approval, the exchange) and returns the token answer, with
// the client's id added as "client_id".
func oauthTokens(t testing.TB, h *testHub) map[string]any {
	t.Helper()
	return oauthTokensAs(t, h, h.Token)
}

// oauthTokensAs is oauthTokens with the authorization approved by the
// holder of approver (the admin token, or a person's token).
func oauthTokensAs(t testing.TB, h *testHub, approver string) map[string]any {
	t.Helper()
	base := h.URL()
	st, reg := callURL(t, "", "POST", base+"/oauth/register", map[string]any{
		"client_name": "script", "redirect_uris": []string{"http://127.0.0.1:9/cb"}, "token_endpoint_auth_method": "none"})
	if st != 201 {
		t.Fatalf("register = %d %v", st, reg)
	}
	verifier := strings.Repeat("v", 64)
	sum := sha256.Sum256([]byte(verifier))
	authURL := base + "/oauth/authorize?" + url.Values{"client_id": {reg["client_id"].(string)}, "redirect_uri": {"http://127.0.0.1:9/cb"},
		"response_type": {"code"}, "code_challenge": {base64.RawURLEncoding.EncodeToString(sum[:])}, "code_challenge_method": {"S256"}}.Encode()
	id := openAuthorization(t, base, authURL)
	if st, body := h.callWith(approver, "POST", "/api/oauth/requests/"+id+"/approve", nil); st != 200 {
		t.Fatalf("approve = %d %v", st, body)
	}
	_, state := callURL(t, "", "GET", base+"/oauth/requests/"+id)
	next, _ := url.Parse(state["next"].(string))
	tok := tokenRequest(t, base, url.Values{"grant_type": {"authorization_code"}, "client_id": {reg["client_id"].(string)},
		"code": {next.Query().Get("code")}, "code_verifier": {verifier}, "redirect_uri": {"http://127.0.0.1:9/cb"}})
	if access, _ := tok["access_token"].(string); access == "" {
		t.Fatalf("token = %v", tok)
	}
	tok["client_id"] = reg["client_id"]
	return tok
}

// tokenRequest posts form to base's token endpoint and returns its answer.
func tokenRequest(t testing.TB, base string, form url.Values) map[string]any {
	t.Helper()
	res, err := http.PostForm(base+"/oauth/token", form)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var tok map[string]any
	json.NewDecoder(res.Body).Decode(&tok)
	return tok
}

// mcpInitialize opens an MCP session at base/mcp with token and returns
// the status.
func mcpInitialize(t testing.TB, base, token string) int {
	t.Helper()
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}`
	req, _ := http.NewRequest("POST", base+"/mcp", strings.NewReader(initialize))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}

// With mcp-oauth off, nothing of the flow is served and /mcp takes the
// admin token only.
func TestMCPOAuthCanBeTurnedOff(t *testing.T) {
	h := startHub(t, "", func(c *server.Config) { c.MCPOAuth = "off" })
	for _, p := range []string{"/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-authorization-server"} {
		if st, _ := callURL(t, "", "GET", h.URL()+p); st != 404 {
			t.Errorf("GET %s with mcp-oauth off = %d; want 404", p, st)
		}
	}
	if st, _ := callURL(t, "", "POST", h.URL()+"/oauth/register", map[string]any{"redirect_uris": []string{"http://127.0.0.1/cb"}}); st != 404 && st != 405 {
		t.Errorf("POST /oauth/register with mcp-oauth off = %d", st)
	}
	res, err := http.Post(h.URL()+"/mcp", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 401 || strings.Contains(res.Header.Get("WWW-Authenticate"), "resource_metadata") {
		t.Fatalf("/mcp with mcp-oauth off = %d %q", res.StatusCode, res.Header.Get("WWW-Authenticate"))
	}
}

// A refresh token replaced on one node of a cluster and presented again
// on another revokes the grant on every node: the replaced tokens travel
// with the shared grant.
func TestClusterRevokesAnOAuthGrantWhenAReplacedRefreshTokenComesBack(t *testing.T) {
	nodes := startCluster(t, 2)
	tok := oauthTokens(t, nodes[0].testHub)
	stolen, client := tok["refresh_token"].(string), tok["client_id"].(string)
	fresh := tokenRequest(t, nodes[0].URL(), url.Values{"grant_type": {"refresh_token"}, "client_id": {client}, "refresh_token": {stolen}})
	access, _ := fresh["access_token"].(string)
	if access == "" {
		t.Fatalf("refresh on hub-1 = %v", fresh)
	}
	waitFor(t, "the refreshed token on hub-2", func() bool { return mcpInitialize(t, nodes[1].URL(), access) == 200 })
	replay := tokenRequest(t, nodes[1].URL(), url.Values{"grant_type": {"refresh_token"}, "client_id": {client}, "refresh_token": {stolen}})
	if replay["error"] != "invalid_grant" || !strings.Contains(fmt.Sprint(replay["error_description"]), "already used") {
		t.Fatalf("replaying the replaced refresh token on hub-2 = %v; want invalid_grant saying the grant was revoked", replay)
	}
	for _, c := range nodes {
		waitFor(t, "the revocation on "+c.name, func() bool { return mcpInitialize(t, c.URL(), access) == 401 })
	}
	if again := tokenRequest(t, nodes[0].URL(), url.Values{"grant_type": {"refresh_token"}, "client_id": {client}, "refresh_token": {fresh["refresh_token"].(string)}}); again["error"] != "invalid_grant" {
		t.Fatalf("the grant's current refresh token still works on hub-1: %v", again)
	}
}

// The waiting room of authorizations counts the client's address as the
// hub sees it behind a trusted proxy: one address's flood makes way among
// its own requests and leaves another address's request alone, even one
// whose consent page is not open yet.
func TestOAuthAuthorizationFloodBehindATrustedProxy(t *testing.T) {
	h := startHub(t, "", func(c *server.Config) { c.TrustedProxies = []string{"127.0.0.1"} })
	base := h.URL()
	register := func() string {
		st, reg := callURL(t, "", "POST", base+"/oauth/register", map[string]any{
			"client_name": "x", "redirect_uris": []string{"http://127.0.0.1:9/cb"}, "token_endpoint_auth_method": "none"})
		if st != 201 {
			t.Fatalf("register = %d %v", st, reg)
		}
		return reg["client_id"].(string)
	}
	sum := sha256.Sum256([]byte(strings.Repeat("v", 64)))
	authorize := func(client, forwardedFor string) (int, string) {
		req, _ := http.NewRequest("GET", base+"/oauth/authorize?"+url.Values{"client_id": {client}, "redirect_uri": {"http://127.0.0.1:9/cb"},
			"response_type": {"code"}, "code_challenge": {base64.RawURLEncoding.EncodeToString(sum[:])}, "code_challenge_method": {"S256"}}.Encode(), nil)
		req.Header.Set("X-Forwarded-For", forwardedFor)
		res, err := noFollow.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		_, id, _ := strings.Cut(res.Header.Get("Location"), "/oauth/consent#")
		return res.StatusCode, id
	}
	st, person := authorize(register(), "127.0.0.3")
	if st != http.StatusFound {
		t.Fatalf("the person's authorize = %d", st)
	}
	flood := register()
	for i := range 100 {
		if st, _ := authorize(flood, "127.0.0.2"); st != http.StatusFound {
			t.Fatalf("flood authorize %d = %d; want its own unopened requests to make way", i, st)
		}
	}
	if st, body := h.call("POST", "/api/oauth/requests/"+person+"/approve", nil); st != 200 {
		t.Fatalf("approving the person's request after the flood = %d %v", st, body)
	}
	_, pending := h.call("GET", "/api/oauth/requests", nil)
	if reqs, _ := pending["requests"].([]any); len(reqs) != 8 {
		t.Fatalf("%d requests waiting after the flood; want the flooding address's 8", len(reqs))
	}
}
