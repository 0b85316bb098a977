package dashboard_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/xiaozhi-hub/hub/server/servertest"
	"github.com/xiaozhi-hub/hub/sim"
)

// The Chinese page shows a server error in Chinese with the server's own
// detail beside it (calling a tool of a device that went offline), every
// error code has its text in both languages, and the call history at
// 390 px is a card per call: no sideways scrolling, and each call's device,
// tool, outcome, who made it and when are on screen.
func TestBrowserChineseErrorsAndCallHistoryAtPhoneWidth(t *testing.T) {
	h := startHub(t, nil)
	d := connect(t, h, sim.Config{DeviceID: mcpID, Lamp: true})
	waitFor(t, "the tools discovered", func() bool {
		dev, err := h.Registry.Device(mcpID)
		return err == nil && dev.ToolCount > 0
	})
	apiCall(t, h, "PATCH", "/api/devices/"+mcpID, map[string]any{"name": "客厅音箱"})
	apiCall(t, h, "POST", "/api/devices/"+mcpID+"/tools/self.audio_speaker.set_volume/call", map[string]any{"arguments": map[string]any{"volume": 30}})

	b := newBrowser(t, h.URL(), 390, "zh-CN")
	var missing []string
	b.eval(`["not_found", "invalid_argument", "bad_request", "device_offline", "device_error", "device_disconnected", "timeout",
		"device_busy", "unauthorized", "forbidden", "conflict", "internal", "too_many_requests", "unavailable"]
		.filter(c => !MESSAGES.zh["err.code." + c] || !MESSAGES.en["err.code." + c] || MESSAGES.zh["err.code." + c] === MESSAGES.en["err.code." + c])`, &missing)
	if len(missing) > 0 {
		t.Fatalf("error codes without an English and a Chinese text: %v", missing)
	}
	b.login()
	b.run(chromedp.Click(`li.device[data-id="`+mcpID+`"]`, chromedp.ByQuery))
	vol := `.tool[data-tool="self.audio_speaker.set_volume"]`
	b.waitJS("the volume form", `document.querySelector('`+vol+` input[name=volume]')`)

	// The device goes away; its cached tools stay listed.
	d.Close()
	waitFor(t, "the device offline", func() bool {
		dev, err := h.Registry.Device(mcpID)
		return err == nil && !dev.Online
	})
	b.waitJS("the device shown offline", `document.querySelector("#detail").textContent.includes("最后在线")`)
	b.waitJS("the volume form again", `document.querySelector('`+vol+` input[name=volume]')`)
	st, body := apiAs(t, h, servertest.Token, "POST", "/api/devices/"+mcpID+"/tools/self.audio_speaker.set_volume/call", map[string]any{"arguments": map[string]any{"volume": 42}})
	e, _ := body["error"].(map[string]any)
	detail, _ := e["message"].(string)
	if st != 409 || e["code"] != "device_offline" || detail == "" {
		t.Fatalf("calling an offline device: %d %v", st, body)
	}
	b.run(chromedp.SendKeys(vol+` input[name=volume]`, "42", chromedp.ByQuery),
		chromedp.Click(vol+` button.call`, chromedp.ByQuery))
	b.waitJS("the error", `document.querySelector('`+vol+` pre.result.err')`)
	var shown string
	b.eval(`document.querySelector('`+vol+` pre.result.err').textContent`, &shown)
	if want := "设备离线（" + detail + "）"; shown != want {
		t.Fatalf("the Chinese page shows %q for the offline device, want %q", shown, want)
	}
	b.shot("zh-390-error")

	// The call history: a card per call, within the screen.
	b.waitJS("the calls listed", `document.querySelectorAll("#calls tbody tr[data-id]").length >= 1`)
	b.run(chromedp.Evaluate(`document.querySelector("#callsBox").scrollIntoView()`, nil))
	b.shot("zh-390-calls")
	checkFits(t, b, 390)
	var cards []struct {
		Text           string
		Who            string
		Label, Labels  string
		Left, Right    float64
		Scroll, Client int
	}
	b.eval(`[...document.querySelectorAll("#calls tbody tr[data-id]")].map(r => {
		const box = r.getBoundingClientRect(), sc = document.querySelector("#callsBox .scroll");
		const who = r.querySelector('td[data-i18n-label="calls.caller"]');
		return {text: r.innerText, who: who.innerText, label: getComputedStyle(who, "::before").content,
			labels: [...r.cells].map(td => getComputedStyle(td, "::before").content).join(" "),
			left: box.left, right: box.right, scroll: sc.scrollWidth, client: sc.clientWidth};
	})`, &cards)
	if len(cards) == 0 {
		t.Fatal("no call in the history")
	}
	for _, c := range cards {
		if c.Scroll > c.Client || c.Left < 0 || c.Right > 390 {
			t.Errorf("a call's card does not fit at 390 px (left %.0f, right %.0f, scroll %d in %d): %q", c.Left, c.Right, c.Scroll, c.Client, c.Text)
		}
		if !strings.Contains(c.Who, "admin") || !strings.Contains(c.Label, "调用者") {
			t.Errorf("the card does not say who made the call: who %q, label %s", c.Who, c.Label)
		}
		for _, w := range []string{"客厅音箱", "self.audio_speaker.set_volume"} {
			if !strings.Contains(c.Text, w) {
				t.Errorf("the card lacks %q: %q", w, c.Text)
			}
		}
		for _, w := range []string{"时间", "设备", "工具", "结果"} {
			if !strings.Contains(c.Labels, w) {
				t.Errorf("the card's cells are not labelled %q: %s", w, c.Labels)
			}
		}
	}
	var outcomes string
	b.eval(`document.querySelector("#calls tbody").innerText`, &outcomes)
	if !strings.Contains(outcomes, "成功") {
		t.Errorf("the successful call's outcome is not shown in Chinese: %q", outcomes)
	}
}
