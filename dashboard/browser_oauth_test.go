package dashboard_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"
)

// An MCP client's OAuth authorization as a person meets it: the client
// opens the hub's authorization URL in the browser, the consent page shows
// who asks, and Allow (with the admin token the dashboard already keeps)
// sends the browser back to the client with a code. A second client is
// allowed from the dashboard's MCP clients list; one is then revoked there,
// after a confirmation.
func TestMCPClientAllowedAndRevokedInTheBrowser(t *testing.T) {
	h := startHub(t, nil)
	var mu sync.Mutex
	var codes []string
	back := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		codes = append(codes, r.URL.Query().Get("code"))
		mu.Unlock()
		w.Write([]byte("back at the client"))
	}))
	defer back.Close()
	gotCode := func() bool { mu.Lock(); defer mu.Unlock(); return len(codes) > 0 && codes[len(codes)-1] != "" }

	register := func(name string) string {
		b, _ := json.Marshal(map[string]any{"client_name": name, "redirect_uris": []string{back.URL + "/cb"}, "token_endpoint_auth_method": "none"})
		res, err := http.Post(h.URL()+"/oauth/register", "application/json", bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var m map[string]any
		json.NewDecoder(res.Body).Decode(&m)
		if res.StatusCode != 201 {
			t.Fatalf("register = %d %v", res.StatusCode, m)
		}
		return m["client_id"].(string)
	}
	sum := sha256.Sum256([]byte(strings.Repeat("v", 64)))
	authURL := func(id string) string {
		return h.URL() + "/oauth/authorize?" + url.Values{"client_id": {id}, "redirect_uri": {back.URL + "/cb"}, "response_type": {"code"},
			"code_challenge": {base64.RawURLEncoding.EncodeToString(sum[:])}, "code_challenge_method": {"S256"}, "state": {"s"}}.Encode()
	}

	b := newBrowser(t, h.URL(), 1024, "en-US")
	b.run(chromedp.Navigate(h.URL() + "/"))
	b.login()

	// 1. On the consent page the client opened.
	inspector := register("MCP Inspector")
	b.run(chromedp.Navigate(authURL(inspector)))
	b.waitJS("the consent page naming the client", `document.querySelector("#client") && document.querySelector("#client").textContent === "MCP Inspector"`)
	b.waitJS("the token kept by the dashboard", `document.querySelector("#token").value !== ""`)
	b.run(chromedp.Evaluate(`document.querySelector("#lang").value = "zh"; document.querySelector("#lang").dispatchEvent(new Event("change"))`, nil))
	b.waitJS("the page in Chinese", `document.querySelector("#title").textContent.includes("请求使用")`)
	b.shot("consent")
	b.run(chromedp.Click("#approve", chromedp.ByQuery))
	waitFor(t, "the browser back at the client with a code", gotCode)

	// 2. From the dashboard: the authorization waits there.
	claude := register("Claude")
	res, err := noRedirect.Get(authURL(claude)) // the client's browser, elsewhere
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	_, reqID, _ := strings.Cut(res.Header.Get("Location"), "#")
	b.run(chromedp.Navigate(h.URL() + "/"))
	b.waitJS("the waiting client listed", `[...document.querySelectorAll("#mcpRequests li")].some(li => li.textContent.includes("Claude"))`)
	b.run(chromedp.Click(`#mcpRequests li[data-request] .mcp-allow`, chromedp.ByQuery))
	b.waitJS("the confirmation", `document.querySelector("#confirm").open`)
	b.run(chromedp.Click(`#confirmOk`, chromedp.ByQuery))
	waitFor(t, "the authorization approved", func() bool {
		res, err := http.Get(h.URL() + "/oauth/requests/" + reqID)
		if err != nil {
			return false
		}
		defer res.Body.Close()
		var m map[string]any
		json.NewDecoder(res.Body).Decode(&m)
		return m["status"] == "approved"
	})

	// 3. Revoke, after a confirmation.
	b.waitJS("the allowed clients listed", `document.querySelectorAll("#mcpClients li[data-client]").length === 2`)
	b.shot("clients")
	b.run(chromedp.Click(`#mcpClients li[data-client="`+inspector+`"] .mcp-revoke`, chromedp.ByQuery))
	b.waitJS("the confirmation", `document.querySelector("#confirm").open && document.querySelector("#confirmText").textContent.includes("MCP Inspector")`)
	b.run(chromedp.Click(`#confirmOk`, chromedp.ByQuery))
	b.waitJS("the revoked client gone", `!document.querySelector('#mcpClients li[data-client="`+inspector+`"]')`)
	left := apiCall(t, h, "GET", "/api/oauth/clients", nil)
	if s := jsonString(left); strings.Contains(s, inspector) || !strings.Contains(s, claude) {
		t.Fatalf("after revoking the Inspector: %s", s)
	}
}

var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
