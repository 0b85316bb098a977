package oauth_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/oauth"
	"github.com/xiaozhi-hub/hub/store"
)

const redirect = "http://127.0.0.1:33418/callback"

type authServer struct {
	t   *testing.T
	svc *oauth.Service
	url string
	st  *store.Store
}

func openStore(t *testing.T, path string) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func start(t *testing.T, st *store.Store) *authServer {
	t.Helper()
	svc, err := oauth.New(context.Background(), st, oauth.Options{})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	svc.Register(mux)
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	return &authServer{t: t, svc: svc, url: hs.URL, st: st}
}

func newServer(t *testing.T) *authServer {
	return start(t, openStore(t, filepath.Join(t.TempDir(), "hub.db")))
}

var noRedirects = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func (a *authServer) postJSON(path string, body any) (int, map[string]any) {
	a.t.Helper()
	b, _ := json.Marshal(body)
	res, err := http.Post(a.url+path, "application/json", strings.NewReader(string(b)))
	if err != nil {
		a.t.Fatal(err)
	}
	return decode(a.t, res)
}

func (a *authServer) postForm(path string, form url.Values) (int, map[string]any) {
	a.t.Helper()
	res, err := http.PostForm(a.url+path, form)
	if err != nil {
		a.t.Fatal(err)
	}
	return decode(a.t, res)
}

func decode(t *testing.T, res *http.Response) (int, map[string]any) {
	t.Helper()
	defer res.Body.Close()
	var m map[string]any
	json.NewDecoder(res.Body).Decode(&m)
	return res.StatusCode, m
}

func (a *authServer) registerClient(name string) string {
	a.t.Helper()
	st, m := a.postJSON("/oauth/register", map[string]any{
		"client_name": name, "redirect_uris": []string{redirect}, "token_endpoint_auth_method": "none",
	})
	if st != 201 || m["client_id"] == nil {
		a.t.Fatalf("register = %d %v", st, m)
	}
	return m["client_id"].(string)
}

func pkce(verifier string) string {
	sum := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

const verifier = "a-verifier-that-is-long-enough-for-pkce-0123456789"

// authorize asks for a code as a browser would; it returns the id of the
// authorization waiting for a person.
func (a *authServer) authorize(clientID string, extra url.Values) string {
	a.t.Helper()
	q := url.Values{"client_id": {clientID}, "redirect_uri": {redirect}, "response_type": {"code"},
		"code_challenge": {pkce(verifier)}, "code_challenge_method": {"S256"}, "state": {"st8"},
		"resource": {a.url + "/mcp"}}
	for k, v := range extra {
		q[k] = v
	}
	res, err := noRedirects.Get(a.url + "/oauth/authorize?" + q.Encode())
	if err != nil {
		a.t.Fatal(err)
	}
	res.Body.Close()
	loc := res.Header.Get("Location")
	_, id, ok := strings.Cut(loc, "/oauth/consent#")
	if res.StatusCode != 302 || !ok {
		a.t.Fatalf("authorize = %d, Location %q; want 302 to the consent page", res.StatusCode, loc)
	}
	return id
}

// approve plays the admin and returns the code the client's browser gets.
func (a *authServer) approve(id string) string {
	a.t.Helper()
	if _, err := a.svc.Decide(id, true, ""); err != nil {
		a.t.Fatal(err)
	}
	return a.approvedCode(id)
}

// approvedCode is the code the browser of an approved authorization is
// sent back with.
func (a *authServer) approvedCode(id string) string {
	a.t.Helper()
	st, m := getJSON(a.t, a.url+"/oauth/requests/"+id)
	if st != 200 || m["status"] != "approved" {
		a.t.Fatalf("request state = %d %v", st, m)
	}
	next, _ := url.Parse(m["next"].(string))
	if !strings.HasPrefix(next.String(), redirect) || next.Query().Get("state") != "st8" || next.Query().Get("iss") != a.url {
		a.t.Fatalf("the browser is sent to %s; want %s with the state and iss", next, redirect)
	}
	return next.Query().Get("code")
}

func getJSON(t *testing.T, u string) (int, map[string]any) {
	t.Helper()
	res, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	return decode(t, res)
}

func (a *authServer) exchange(clientID, code, verifier string) (int, map[string]any) {
	return a.postForm("/oauth/token", url.Values{"grant_type": {"authorization_code"}, "client_id": {clientID},
		"code": {code}, "code_verifier": {verifier}, "redirect_uri": {redirect}, "resource": {a.url + "/mcp"}})
}

func TestAuthorizationCodeFlowWithPKCE(t *testing.T) {
	a := newServer(t)
	ctx := context.Background()
	id := a.registerClient("Claude")
	req := a.authorize(id, nil)
	if p := a.svc.Pending(); len(p) != 1 || p[0].ClientName != "Claude" || p[0].Redirect != "http://127.0.0.1:33418" {
		t.Fatalf("pending = %+v", p)
	}
	code := a.approve(req)

	// The code is bound to the verifier and used once.
	if st, m := a.exchange(id, code, strings.Repeat("x", 50)); st != 400 || m["error"] != "invalid_grant" {
		t.Fatalf("exchange with a wrong verifier = %d %v", st, m)
	}
	if st, m := a.exchange(id, code, verifier); st != 400 || m["error"] != "invalid_grant" {
		t.Fatalf("a code tried once must be gone: %d %v", st, m)
	}
	code = a.approve(a.authorize(id, nil))
	st, tok := a.exchange(id, code, verifier)
	if st != 200 || tok["token_type"] != "Bearer" || tok["scope"] != "mcp" {
		t.Fatalf("exchange = %d %v", st, tok)
	}
	access, refresh := tok["access_token"].(string), tok["refresh_token"].(string)
	if !live(a.svc, ctx, access) {
		t.Fatal("the access token is not accepted")
	}
	if st, _ := a.exchange(id, code, verifier); st != 400 {
		t.Fatal("a code exchanged once was exchanged again")
	}

	// Refreshing rotates both tokens.
	st, tok2 := a.postForm("/oauth/token", url.Values{"grant_type": {"refresh_token"}, "client_id": {id}, "refresh_token": {refresh}})
	if st != 200 || tok2["access_token"] == access {
		t.Fatalf("refresh = %d %v", st, tok2)
	}
	if live(a.svc, ctx, access) {
		t.Fatal("the access token before the refresh still works")
	}
	// (Presenting the replaced refresh token again ends the grant:
	// TestReplayedRefreshTokenRevokesTheGrant.)
	if !live(a.svc, ctx, tok2["access_token"].(string)) {
		t.Fatal("the refreshed access token is not accepted")
	}

	// RFC 7009: the client revokes its own token.
	if st, _ := a.postForm("/oauth/revoke", url.Values{"client_id": {id}, "token": {tok2["refresh_token"].(string)}}); st != 200 {
		t.Fatalf("revoke = %d", st)
	}
	if live(a.svc, ctx, tok2["access_token"].(string)) {
		t.Fatal("revoking the refresh token must end its grant's access token too")
	}
}

func TestDeniedAuthorizationTellsTheClient(t *testing.T) {
	a := newServer(t)
	req := a.authorize(a.registerClient("Inspector"), nil)
	if _, err := a.svc.Decide(req, false, ""); err != nil {
		t.Fatal(err)
	}
	_, m := getJSON(t, a.url+"/oauth/requests/"+req)
	next, _ := url.Parse(m["next"].(string))
	if m["status"] != "denied" || next.Query().Get("error") != "access_denied" || next.Query().Get("code") != "" {
		t.Fatalf("denied request = %v", m)
	}
	if _, err := a.svc.Decide(req, true, ""); err == nil {
		t.Fatal("a denied request was approved afterwards")
	}
}

func TestTokensSurviveARestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hub.db")
	st := openStore(t, path)
	a := start(t, st)
	id := a.registerClient("ChatGPT")
	_, tok := a.exchange(id, a.approve(a.authorize(id, nil)), verifier)
	access := tok["access_token"].(string)

	b := start(t, st) // a new process over the same database
	if !live(b.svc, context.Background(), access) {
		t.Fatal("an access token did not survive the restart")
	}
	if cs := b.svc.Clients(); len(cs) != 1 || cs[0].Name != "ChatGPT" || len(cs[0].Grants) != 1 {
		t.Fatalf("clients after restart = %+v", cs)
	}
	if err := b.svc.Revoke(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	c := start(t, st)
	if live(c.svc, context.Background(), access) || len(c.svc.Clients()) != 0 {
		t.Fatal("a revoked client came back after a restart")
	}
}

func TestRegistrationRefusesUnsafeRedirects(t *testing.T) {
	a := newServer(t)
	for _, u := range []string{"http://evil.example/cb", "javascript:alert(1)", "https://x.example/cb#frag", "data:text/html,hi", "/relative", ""} {
		st, m := a.postJSON("/oauth/register", map[string]any{"client_name": "x", "redirect_uris": []string{u}, "token_endpoint_auth_method": "none"})
		if st != 400 || m["error"] != "invalid_redirect_uri" {
			t.Errorf("registering %q = %d %v; want 400 invalid_redirect_uri", u, st, m)
		}
	}
	for _, u := range []string{"https://claude.ai/api/mcp/auth_callback", "http://localhost:6274/oauth/callback", "cursor://anysphere.cursor-retrieval/oauth/callback"} {
		if st, m := a.postJSON("/oauth/register", map[string]any{"client_name": "x", "redirect_uris": []string{u}, "token_endpoint_auth_method": "none"}); st != 201 {
			t.Errorf("registering %q = %d %v; want 201", u, st, m)
		}
	}
}

func TestAuthorizeNeverRedirectsToAnUnregisteredURI(t *testing.T) {
	a := newServer(t)
	id := a.registerClient("x")
	q := url.Values{"client_id": {id}, "redirect_uri": {"https://evil.example/cb"}, "response_type": {"code"},
		"code_challenge": {pkce(verifier)}, "code_challenge_method": {"S256"}}
	res, err := noRedirects.Get(a.url + "/oauth/authorize?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 400 || res.Header.Get("Location") != "" {
		t.Fatalf("authorize with a foreign redirect = %d to %q; want 400 shown here", res.StatusCode, res.Header.Get("Location"))
	}
	// A loopback redirect may change its port (RFC 8252), nothing else.
	q.Set("redirect_uri", "http://127.0.0.1:50123/callback")
	res, _ = noRedirects.Get(a.url + "/oauth/authorize?" + q.Encode())
	res.Body.Close()
	if res.StatusCode != 302 {
		t.Fatalf("authorize with another loopback port = %d; want 302", res.StatusCode)
	}
	// Without PKCE the client is told why, at its registered redirect.
	q.Del("code_challenge")
	res, _ = noRedirects.Get(a.url + "/oauth/authorize?" + q.Encode())
	res.Body.Close()
	loc, _ := url.Parse(res.Header.Get("Location"))
	if res.StatusCode != 302 || loc.Query().Get("error") != "invalid_request" || !strings.Contains(loc.Query().Get("error_description"), "PKCE") {
		t.Fatalf("authorize without PKCE = %d %s", res.StatusCode, loc)
	}
}

func TestConfidentialClientsNeedTheirSecret(t *testing.T) {
	a := newServer(t)
	st, m := a.postJSON("/oauth/register", map[string]any{"client_name": "web app", "redirect_uris": []string{redirect}})
	if st != 201 || m["token_endpoint_auth_method"] != "client_secret_basic" || m["client_secret"] == nil {
		t.Fatalf("register without a method = %d %v; want client_secret_basic with a secret (RFC 7591 §2)", st, m)
	}
	id, secret := m["client_id"].(string), m["client_secret"].(string)
	code := a.approve(a.authorize(id, nil))
	if st, m := a.exchange(id, code, verifier); st != 401 || m["error"] != "invalid_client" {
		t.Fatalf("exchange without the secret = %d %v", st, m)
	}
	code = a.approve(a.authorize(id, nil))
	form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "code_verifier": {verifier}, "redirect_uri": {redirect}}
	req, _ := http.NewRequest("POST", a.url+"/oauth/token", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(url.QueryEscape(id), url.QueryEscape(secret))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if st, m := decode(t, res); st != 200 || m["access_token"] == nil {
		t.Fatalf("exchange with basic auth = %d %v", st, m)
	}
}

func TestRegistrationsAreBounded(t *testing.T) {
	a := newServer(t)
	keep := a.registerClient("approved one")
	_, tok := a.exchange(keep, a.approve(a.authorize(keep, nil)), verifier)
	for i := range oauth.MaxClients + 20 {
		a.registerClient(fmt.Sprintf("flood %d", i))
	}
	cs := a.svc.Clients()
	if len(cs) != oauth.MaxClients {
		t.Fatalf("%d clients registered; want at most %d", len(cs), oauth.MaxClients)
	}
	if cs[0].ID != keep || !live(a.svc, context.Background(), tok["access_token"].(string)) {
		t.Fatal("a flood of registrations pushed out an approved client")
	}
	// The flood's oldest went first.
	for _, c := range cs[1:] {
		if c.Name == "flood 0" {
			t.Fatal("the oldest unapproved registration was kept")
		}
	}
}

func TestMetadataNamesTheHub(t *testing.T) {
	a := newServer(t)
	for _, p := range []string{"/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"} {
		_, m := getJSON(t, a.url+p)
		if m["resource"] != a.url+"/mcp" || fmt.Sprint(m["authorization_servers"]) != "["+a.url+"]" {
			t.Fatalf("%s = %v", p, m)
		}
	}
	_, m := getJSON(t, a.url+"/.well-known/oauth-authorization-server")
	if m["issuer"] != a.url || m["registration_endpoint"] != a.url+"/oauth/register" || fmt.Sprint(m["code_challenge_methods_supported"]) != "[S256]" {
		t.Fatalf("authorization server metadata = %v", m)
	}
	// Browser-based clients (the MCP Inspector) may read it.
	req, _ := http.NewRequest("OPTIONS", a.url+"/oauth/token", nil)
	req.Header.Set("Origin", "http://localhost:6274")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.Header.Get("Access-Control-Allow-Origin") != "*" {
		t.Fatal("the token endpoint answers no CORS preflight")
	}
}

func TestExpiredCodesAndTokens(t *testing.T) {
	now := time.Now()
	st := openStore(t, filepath.Join(t.TempDir(), "hub.db"))
	svc, err := oauth.New(context.Background(), st, oauth.Options{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	svc.Register(mux)
	hs := httptest.NewServer(mux)
	defer hs.Close()
	a := &authServer{t: t, svc: svc, url: hs.URL, st: st}
	id := a.registerClient("x")
	code := a.approve(a.authorize(id, nil))
	now = now.Add(oauth.CodeTTL + time.Second)
	if st, _ := a.exchange(id, code, verifier); st != 400 {
		t.Fatal("an expired code was exchanged")
	}
	_, tok := a.exchange(id, a.approve(a.authorize(id, nil)), verifier)
	now = now.Add(oauth.AccessTTL)
	if live(svc, context.Background(), tok["access_token"].(string)) {
		t.Fatal("an access token outlived its hour")
	}
	req := a.authorize(id, nil)
	now = now.Add(oauth.RequestTTL)
	if _, err := svc.Decide(req, true, ""); err == nil {
		t.Fatal("an expired authorization was approved")
	}
}

// A grant whose token hashes are damaged (another node's copy, or the
// store) is ignored, not a crash, and the hub goes on serving.
func TestAMalformedGrantIsIgnored(t *testing.T) {
	a := newServer(t)
	a.svc.ApplyGrant("g-bad", &hub.OAuthGrant{ID: "g-bad", ClientID: "c", AccessHash: []byte{1, 2, 3}, RefreshHash: nil})
	if live(a.svc, context.Background(), "anything") {
		t.Error("a token matched a malformed grant")
	}
	a.svc.ApplyGrant("g-bad", nil) // and it can be removed again
	if code, _ := a.postJSON("/oauth/register", map[string]any{"client_name": "after", "redirect_uris": []string{"http://127.0.0.1:9/cb"}}); code != 201 {
		t.Errorf("registration after a malformed grant: %d", code)
	}
}

// live reports whether token is a live access token of svc.
func live(svc *oauth.Service, ctx context.Context, token string) bool {
	_, _, ok := svc.AccessToken(ctx, token)
	return ok
}
