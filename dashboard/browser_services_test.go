package dashboard_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/coder/websocket"

	"github.com/xiaozhi-hub/hub/server/servertest"
)

// echoProgram connects to a service's URL as a program written for
// xiaozhi.me would and serves one tool, echo, until the test ends or the
// hub closes the connection.
func echoProgram(t *testing.T, url string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ws, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); _ = ws.CloseNow(); <-done })
	go func() {
		defer close(done)
		for {
			_, data, err := ws.Read(ctx)
			if err != nil {
				return
			}
			var req struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			if json.Unmarshal(data, &req) != nil || len(req.ID) == 0 {
				continue
			}
			result := `{}`
			switch req.Method {
			case "initialize":
				result = `{"protocolVersion":"2024-11-05","capabilities":{"tools":{}},"serverInfo":{"name":"echo","version":"1"}}`
			case "tools/list":
				result = `{"tools":[{"name":"echo","description":"says it back","inputSchema":{"type":"object","properties":{"text":{"type":"string"}}}}]}`
			case "tools/call":
				result = `{"content":[{"type":"text","text":"echoed <b>back</b>"}]}`
			}
			if ws.Write(ctx, websocket.MessageText, []byte(`{"jsonrpc":"2.0","id":`+string(req.ID)+`,"result":`+result+`}`)) != nil {
				return
			}
		}
	}()
}

// The Services section on a phone: the admin creates a service with the
// form and copies its URL (shown once); a program connects to it and the
// section shows it online with its tool; a call appears under its last
// calls; a person without a home sees the hub's service but cannot create
// or revoke; the admin revokes it. In Chinese too, never wider than the
// phone.
func TestBrowserServices(t *testing.T) {
	h := startHub(t, nil)
	alice := person(t, h, "alice")
	b := newBrowser(t, h.URL(), 390, "en-US")
	b.login()
	b.waitJS("the Services section", `!document.querySelector("#servicesBox").hidden && !document.querySelector("#newService").hidden`)
	b.waitJS("no services", `document.querySelector("#services").textContent.includes("No services yet")`)
	b.run(chromedp.SendKeys("#newServiceName", "echo", chromedp.ByQuery), chromedp.Click(`#newService button[type=submit]`, chromedp.ByQuery))
	b.waitJS("the URL shown", `document.querySelector("#serviceURL").textContent.includes("/services/ws?token=xzs_")`)
	var url string
	b.eval(`document.querySelector("#serviceURL").textContent`, &url)
	b.run(chromedp.Click("#serviceCopy", chromedp.ByQuery))
	b.waitJS("copied", `document.querySelector("#serviceCopy").textContent === "Copied"`)
	b.waitJS("listed offline", `document.querySelector('#services li[data-name="echo"]')?.textContent.includes("offline")`)

	echoProgram(t, url)
	b.waitJS("online with its tool", `(li => li && li.querySelector(".dot.on") && li.textContent.includes("says it back"))(document.querySelector('#services li[data-name="echo"]'))`)
	if st, out := apiAs(t, h, servertest.Token, "POST", "/api/services/echo/tools/echo/call", map[string]any{"arguments": map[string]any{"text": "hi"}}); st != 200 {
		t.Fatalf("call: %d %v", st, out)
	}
	b.waitJS("the last call", `document.querySelector('#services li[data-name="echo"] .svc-calls')?.textContent.includes("echoed <b>back</b>")`)
	var bold int
	b.eval(`document.querySelectorAll("#services b").length`, &bold)
	if bold != 0 {
		t.Fatal("a service's result is rendered as HTML")
	}
	b.shot("en-390-services")
	checkFits(t, b, 390)

	// A person sees the hub's service, online, and nothing to manage it with.
	p := newBrowser(t, h.URL(), 390, "zh-CN")
	p.run(chromedp.Evaluate(`localStorage.setItem("xiaozhi-hub-token", `+jsString(alice)+`); location.reload()`, nil))
	p.waitJS("alice's services", `document.querySelector('#services li[data-name="echo"]')?.textContent.includes("在线")`)
	var person struct {
		Form   bool
		Revoke int
		Title  string
	}
	p.eval(`({form: document.querySelector("#newService").hidden, revoke: document.querySelectorAll(".svc-revoke").length,
		title: document.querySelector('[data-i18n="svc.title"]').textContent})`, &person)
	if !person.Form || person.Revoke != 0 || person.Title != "服务" {
		t.Fatalf("alice's Services section: %+v", person)
	}
	var missing []string
	p.eval(`Object.keys(MESSAGES.en).filter(k => k.startsWith("svc.") && (!(k in MESSAGES.zh) || MESSAGES.zh[k] === MESSAGES.en[k]))`, &missing)
	if len(missing) > 0 {
		t.Fatalf("services' messages without Chinese: %v", missing)
	}
	p.shot("zh-390-services")
	checkFits(t, p, 390)

	// The admin revokes it: the program is cut off and the list is empty.
	b.run(chromedp.Click(`#services li[data-name="echo"] .svc-revoke`, chromedp.ByQuery))
	b.waitJS("the question", `document.querySelector("#confirm").open && document.querySelector("#confirmText").textContent.includes("echo")`)
	b.run(chromedp.Click("#confirmOk", chromedp.ByQuery))
	b.waitJS("revoked", `!document.querySelector('#services li[data-name="echo"]')`)
	if _, out := apiAs(t, h, servertest.Token, "GET", "/api/services", nil); len(out["services"].([]any)) != 0 {
		t.Fatalf("after revoking: %v", out)
	}
}
