package oauth_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xiaozhi-hub/hub/oauth"
)

// from is an HTTP client whose connections come from a loopback address
// of its own (127.0.0.x: on Linux the whole 127/8 is the loopback
// interface), so that the hub sees different people.
func from(t *testing.T, ip string) *http.Client {
	t.Helper()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 10 * time.Second}
	c := &http.Client{
		Transport:     &http.Transport{DialContext: d.DialContext, MaxIdleConnsPerHost: 4},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Timeout:       30 * time.Second,
	}
	// One probe: a system where 127.0.0.x is not local skips the test.
	ln, err := net.Listen("tcp", ip+":0")
	if err != nil {
		t.Skipf("%s is not a local address here: %v", ip, err)
	}
	ln.Close()
	t.Cleanup(c.CloseIdleConnections)
	return c
}

// authorizeFrom is a browser at ip opening the authorization URL of
// clientID; it returns the status and the consent page's request id.
func (a *authServer) authorizeFrom(c *http.Client, clientID string) (int, string, string) {
	a.t.Helper()
	q := url.Values{"client_id": {clientID}, "redirect_uri": {redirect}, "response_type": {"code"},
		"code_challenge": {pkce(verifier)}, "code_challenge_method": {"S256"}, "state": {"st8"}}
	res, err := c.Get(a.url + "/oauth/authorize?" + q.Encode())
	if err != nil {
		a.t.Fatal(err)
	}
	defer res.Body.Close()
	var body strings.Builder
	buf := make([]byte, 4096)
	n, _ := res.Body.Read(buf)
	body.Write(buf[:n])
	_, id, _ := strings.Cut(res.Header.Get("Location"), "/oauth/consent#")
	return res.StatusCode, id, body.String()
}

// openConsent is the consent page fetching its request, as the page does
// as soon as the person's browser shows it.
func (a *authServer) openConsent(c *http.Client, id string) {
	a.t.Helper()
	res, err := c.Get(a.url + "/oauth/requests/" + id)
	if err != nil {
		a.t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 {
		a.t.Fatalf("the consent page's request %s = %d", id, res.StatusCode)
	}
}

// Finding: 64 unauthenticated /oauth/authorize calls evicted a person's
// pending authorization. A person who opened the consent page keeps it
// through a flood from the same address and from many others.
func TestAFloodOfAuthorizationsLeavesAPersonsRequest(t *testing.T) {
	a := newServer(t)
	person := from(t, "127.0.0.1")
	client := a.registerClient("Claude")
	st, id, _ := a.authorizeFrom(person, client)
	if st != 302 || id == "" {
		t.Fatalf("the person's authorize = %d", st)
	}
	a.openConsent(person, id)

	// The attacker shares the person's address (one NAT) and then uses 20
	// more: 400 authorizations in all.
	attacker := a.registerClient("flood")
	refused := 0
	for i := range 20 {
		c := person
		if i > 0 {
			c = from(t, fmt.Sprintf("127.0.0.%d", 10+i))
		}
		for range 20 {
			st, fid, body := a.authorizeFrom(c, attacker)
			switch st {
			case 302:
				if i%2 == 1 {
					a.openConsent(c, fid) // the attacker plays the person too
				}
			case 429:
				refused++
				if !strings.Contains(body, "waiting") {
					t.Fatalf("a refused authorization says %q; want why", body)
				}
			default:
				t.Fatalf("flooding authorize = %d %s", st, body)
			}
		}
	}
	if _, err := a.svc.Decide(id, true, ""); err != nil {
		t.Fatalf("the flood pushed out the person's authorization: %v", err)
	}
	if st, tok := a.exchange(client, a.approvedCode(id), verifier); st != 200 {
		t.Fatalf("the person's exchange = %d %v", st, tok)
	}
	if refused == 0 {
		t.Fatal("400 authorizations from 20 addresses were all taken; want the ones beyond the cap refused with 429")
	}
	if n := len(a.svc.Pending()); n > oauth.MaxPending {
		t.Fatalf("%d authorizations waiting; want at most %d", n, oauth.MaxPending)
	}
}

// One address cannot take more than its share of the waiting room: its
// own unopened requests make way, and another address's request, even one
// not opened yet, stays.
func TestOneAddressCannotFillTheWaitingRoom(t *testing.T) {
	a := newServer(t)
	person, attacker := from(t, "127.0.0.1"), from(t, "127.0.0.2")
	client := a.registerClient("Claude")
	_, id, _ := a.authorizeFrom(person, client) // not opened yet
	flood := a.registerClient("flood")
	for range oauth.MaxPending + 36 {
		if st, _, body := a.authorizeFrom(attacker, flood); st != 302 {
			t.Fatalf("an address's own unopened requests should make way: %d %s", st, body)
		}
	}
	if n := len(a.svc.Pending()); n != oauth.MaxPendingPerAddress+1 {
		t.Fatalf("%d waiting; want the attacker's %d and the person's", n, oauth.MaxPendingPerAddress)
	}
	a.openConsent(person, id)
	if _, err := a.svc.Decide(id, true, ""); err != nil {
		t.Fatalf("the person's request was pushed out: %v", err)
	}
}

// Finding: 400 concurrent registrations left more than MaxClients
// clients. The cap holds in memory and in the store, and the approved
// client stays.
func TestConcurrentRegistrationsKeepTheCap(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hub.db")
	st := openStore(t, path)
	a := start(t, st)
	keep := a.registerClient("approved one")
	_, tok := a.exchange(keep, a.approve(a.authorize(keep, nil)), verifier)

	var wg sync.WaitGroup
	start := make(chan struct{})
	body := `{"client_name":"flood","redirect_uris":["` + redirect + `"],"token_endpoint_auth_method":"none"}`
	for range 400 {
		wg.Go(func() {
			<-start
			res, err := http.Post(a.url+"/oauth/register", "application/json", strings.NewReader(body))
			if err != nil {
				t.Error(err)
				return
			}
			res.Body.Close()
		})
	}
	close(start)
	wg.Wait()
	if n := len(a.svc.Clients()); n > oauth.MaxClients {
		t.Fatalf("%d clients after 400 concurrent registrations; want at most %d", n, oauth.MaxClients)
	}
	clients, _, err := st.LoadOAuth(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(clients) > oauth.MaxClients {
		t.Fatalf("the store keeps %d clients; want at most %d", len(clients), oauth.MaxClients)
	}
	t.Logf("after 400 concurrent registrations: %d clients in memory, %d in the store", len(a.svc.Clients()), len(clients))
	kept := map[string]bool{}
	for _, c := range a.svc.Clients() {
		kept[c.ID] = true
	}
	for _, c := range clients {
		if !kept[c.ID] {
			t.Fatalf("the store keeps client %s, which the hub evicted", c.ID)
		}
	}
	if !live(a.svc, context.Background(), tok["access_token"].(string)) {
		t.Fatal("the flood pushed out the approved client")
	}
}

func (a *authServer) refresh(clientID, token string) (int, map[string]any) {
	a.t.Helper()
	return a.postForm("/oauth/token", url.Values{"grant_type": {"refresh_token"}, "client_id": {clientID}, "refresh_token": {token}})
}

// Finding: a replayed, already rotated refresh token was refused but left
// the grant alone. Its replay means two parties hold the grant's tokens:
// the grant ends (OAuth 2.1 §4.3.1), also after a restart.
func TestReplayedRefreshTokenRevokesTheGrant(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "hub.db")
	st := openStore(t, path)
	a := start(t, st)
	id := a.registerClient("Claude")
	_, tok := a.exchange(id, a.approve(a.authorize(id, nil)), verifier)
	stolen := tok["refresh_token"].(string)
	code, tok2 := a.refresh(id, stolen)
	if code != 200 {
		t.Fatalf("refresh = %d %v", code, tok2)
	}
	code, m := a.refresh(id, stolen)
	if code != 400 || m["error"] != "invalid_grant" || !strings.Contains(fmt.Sprint(m["error_description"]), "already used") {
		t.Fatalf("replaying a rotated refresh token = %d %v; want 400 invalid_grant saying the grant was revoked", code, m)
	}
	if live(a.svc, ctx, tok2["access_token"].(string)) {
		t.Fatal("the current access token still works after its grant's old refresh token was replayed")
	}
	if code, m := a.refresh(id, tok2["refresh_token"].(string)); code != 400 {
		t.Fatalf("the current refresh token still works after a replay: %d %v", code, m)
	}
	if cs := a.svc.Clients(); len(cs) != 1 || len(cs[0].Grants) != 0 {
		t.Fatalf("clients after the replay = %+v; want the client without grants", cs)
	}

	// The rotated tokens are remembered across a restart.
	_, tok = a.exchange(id, a.approve(a.authorize(id, nil)), verifier)
	old := tok["refresh_token"].(string)
	_, tok3 := a.refresh(id, old)
	b := start(t, st)
	if code, _ := b.refresh(id, old); code != 400 {
		t.Fatal("a rotated refresh token worked after a restart")
	}
	if live(b.svc, ctx, tok3["access_token"].(string)) {
		t.Fatal("after a restart, a replayed refresh token left its grant alive")
	}
}

// Finding: view-source:, filesystem: and a port above 65535 were taken as
// redirect URIs.
func TestRegistrationRefusesUnsafeRedirectURIs(t *testing.T) {
	a := newServer(t)
	bad := map[string]string{
		"view-source:https://claude.ai/cb":    "view-source",
		"filesystem:https://claude.ai/tmp/cb": "filesystem",
		"blob:https://claude.ai/1234":         "blob",
		"about:blank":                         "about",
		"VBScript:msgbox(1)":                  "vbscript",
		"DATA:text/html,hi":                   "data",
		"JavaScript:alert(1)":                 "javascript",
		"FILE:///etc/passwd":                  "file",
		"https://claude.ai:65536/cb":          "port",
		"https://claude.ai:99999/cb":          "port",
		"https://claude.ai:0/cb":              "port",
		"http://127.0.0.1:70000/cb":           "port",
		"cursor://x:123456/cb":                "port",
		"https://user:pw@claude.ai/cb":        "user",
		`https://claude.ai\@evil.example/cb`:  "backslash",
		"https://claude.ai/c b":               "space",
		"https:claude.ai/cb":                  "host",
		"http://localhost.evil.example:80/cb": "http",
		"ws://127.0.0.1/cb":                   "ws",
		"1app:/cb":                            "absolute uri",
		"https://claude.ai/cb\x00":            "control character",
		"intent://cb#Intent;scheme=x;end":     "fragment",
		"chrome-extension://abcdef/cb.html":   "chrome-extension",
	}
	for u, why := range bad {
		st, m := a.postJSON("/oauth/register", map[string]any{"client_name": "x", "redirect_uris": []string{u}, "token_endpoint_auth_method": "none"})
		desc, _ := m["error_description"].(string)
		if st != 400 || m["error"] != "invalid_redirect_uri" || !strings.Contains(strings.ToLower(desc), why) {
			t.Errorf("registering %q = %d %v; want 400 invalid_redirect_uri mentioning %q", u, st, m, why)
		}
	}
	for _, u := range []string{"https://claude.ai/api/mcp/auth_callback", "https://claude.ai:8443/cb", "http://localhost:6274/oauth/callback",
		"http://[::1]:33418/cb", "http://127.0.0.1/cb", "cursor://anysphere.cursor-retrieval/oauth/callback",
		"com.example.app:/oauth2redirect", "vscode://vscode.github-authentication/did-authenticate"} {
		if st, m := a.postJSON("/oauth/register", map[string]any{"client_name": "x", "redirect_uris": []string{u}, "token_endpoint_auth_method": "none"}); st != 201 {
			t.Errorf("registering %q = %d %v; want 201", u, st, m)
		}
	}

	// A loopback redirect may change its port at authorization, but only to
	// a real one.
	id := a.registerClient("x")
	q := url.Values{"client_id": {id}, "redirect_uri": {"http://127.0.0.1:99999/callback"}, "response_type": {"code"},
		"code_challenge": {pkce(verifier)}, "code_challenge_method": {"S256"}}
	res, err := noRedirects.Get(a.url + "/oauth/authorize?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 400 || res.Header.Get("Location") != "" {
		t.Fatalf("authorize to loopback port 99999 = %d to %q; want 400 shown here", res.StatusCode, res.Header.Get("Location"))
	}
}
