package dashboard_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/xiaozhi-hub/hub/server"
	"github.com/xiaozhi-hub/hub/server/servertest"
)

// The browser test device (/device): with the admin token it approves
// itself, connects like the firmware and offers its two tools, which the
// API calls; pressing talk opens a turn, answered (no speech provider is
// configured here) with what to configure.
func TestBrowserTestDevice(t *testing.T) {
	h := startHub(t, func(c *server.Config) { c.DeviceAuth = "activation" })
	b := newBrowser(t, h.URL(), 1024, "en-US")
	b.run(chromedp.Navigate(h.URL()+"/device"), chromedp.WaitReady("#connect", chromedp.ByQuery),
		chromedp.SendKeys("#token", servertest.Token, chromedp.ByQuery), chromedp.Click("#connect", chromedp.ByQuery))
	b.waitJS("the page online", `document.querySelector("#state").textContent === "online"`)
	var id string
	b.eval(`document.querySelector("#devid").textContent`, &id)
	waitFor(t, "the page's tools in the hub", func() bool {
		tools := apiCall(t, h, "GET", "/api/devices/"+id+"/tools", nil)
		return strings.Contains(jsonString(tools), "self.page.set_color")
	})
	res := apiCall(t, h, "POST", "/api/devices/"+id+"/tools/self.page.set_color/call", map[string]any{"arguments": map[string]any{"color": "rgb(1, 2, 3)"}})
	if !strings.Contains(jsonString(res), `"isError":false`) {
		t.Fatalf("call: %v", res)
	}
	b.waitJS("the colour applied by the tool", `document.body.style.background === "rgb(1, 2, 3)"`)
	b.run(chromedp.Evaluate(`document.querySelector("#talk").dispatchEvent(new PointerEvent("pointerdown"))`, nil))
	b.waitJS("the turn answered", `document.querySelector("#log").textContent.includes("asr-provider")`)
	b.run(chromedp.Evaluate(`document.querySelector("#talk").dispatchEvent(new PointerEvent("pointerup"))`, nil))
	b.shot("device")
}
