package dashboard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/xiaozhi-hub/hub/server"
	"github.com/xiaozhi-hub/hub/server/servertest"
	"github.com/xiaozhi-hub/hub/sim"
)

// apiCall calls the hub's REST API with the admin token (mustAs).
func apiCall(t *testing.T, h *server.Hub, method, path string, body any) map[string]any {
	t.Helper()
	return mustAs(t, h, servertest.Token, method, path, body)
}

const (
	mcpID = "aa:00:00:00:0b:01"
	iotID = "aa:00:00:00:0b:02"
)

// A person enters the token, sees the devices, calls a tool through its
// form, sends an IoT command, finds the calls in the history, confirms a
// user-only tool, deletes a device and revokes a token.
func TestBrowserDevicesToolsAndIoT(t *testing.T) {
	h := startHub(t, nil)
	mcp := connect(t, h, sim.Config{DeviceID: mcpID, Lamp: true})
	b := newBrowser(t, h.URL(), 1280, "en-US")
	b.login()
	b.waitJS("the device listed", `document.querySelectorAll("li.device").length === 1`)
	b.waitJS("the live stream", `document.querySelector("#status").textContent === "live"`)
	iot := connect(t, h, sim.Config{DeviceID: iotID, Mode: sim.ModeIoT})
	b.waitJS("both devices listed", `document.querySelectorAll("li.device").length === 2`)
	b.waitJS("the online events as sentences", `document.querySelector("#events").textContent.includes("came online")`)
	var clusterShown bool
	b.eval(`!document.querySelector("#clusterBox").hidden`, &clusterShown)
	if clusterShown {
		t.Fatal("a hub alone shows a cluster section")
	}

	// A tool call through its form.
	b.run(chromedp.Click(`li.device[data-id="`+mcpID+`"]`, chromedp.ByQuery))
	vol := `.tool[data-tool="self.audio_speaker.set_volume"]`
	b.waitJS("the volume form", `document.querySelector('`+vol+` input[name=volume]')`)
	b.run(chromedp.SendKeys(vol+` input[name=volume]`, "42", chromedp.ByQuery),
		chromedp.Click(vol+` button.call`, chromedp.ByQuery))
	b.waitJS("the call's result", `document.querySelector('`+vol+` pre.result')`)
	waitFor(t, "the device's volume to be 42", func() bool { return mcp.Volume() == 42 })
	b.waitJS("the call in the history", `[...document.querySelectorAll("#calls tbody tr")].some(r => r.textContent.includes("self.audio_speaker.set_volume"))`)
	b.run(chromedp.SendKeys("#callTool", "lamp", chromedp.ByQuery))
	b.waitJS("the tool filter", `![...document.querySelectorAll("#calls tbody tr")].some(r => r.textContent.includes("set_volume"))`)

	// A user-only tool asks first; cancelling (or Esc) calls nothing, and
	// confirming right after calls once.
	sys := `.tool[data-tool="self.get_system_info"]`
	b.run(chromedp.Click(sys+` button.call`, chromedp.ByQuery))
	b.waitJS("the confirmation", `document.querySelector("#confirm").open && document.querySelector("#confirmText").textContent.includes("self.get_system_info")`)
	b.shot("confirm")
	b.run(chromedp.Click(`#confirm button[value=cancel]`, chromedp.ByQuery))
	b.waitJS("the confirmation closed", `!document.querySelector("#confirm").open`)
	b.run(chromedp.Click(sys+` button.call`, chromedp.ByQuery))
	b.waitJS("the confirmation again", `document.querySelector("#confirm").open`)
	b.run(chromedp.KeyEvent(kb.Escape))
	b.waitJS("the confirmation closed by Esc", `!document.querySelector("#confirm").open`)
	b.run(chromedp.Click(sys+` button.call`, chromedp.ByQuery))
	b.waitJS("the confirmation again", `document.querySelector("#confirm").open`)
	b.run(chromedp.Click(`#confirmOk`, chromedp.ByQuery))
	b.waitJS("the user-only tool's result", `document.querySelector('`+sys+` pre.result')`)
	if n := countOf(mcp.ReceivedCalls(), "self.get_system_info"); n != 1 {
		t.Fatalf("self.get_system_info called %d times, want 1 (the cancelled one must not call)", n)
	}
	b.waitJS("reboot marked as destructive", `document.querySelector('.tool[data-tool="self.reboot"] .tag.warn')`)
	var statusMarked bool
	b.eval(`!!document.querySelector('.tool[data-tool="self.get_device_status"] .tag.warn')`, &statusMarked)
	if statusMarked {
		t.Fatal("self.get_device_status (it reads \"information\") is marked as destructive")
	}

	// An IoT command.
	b.run(chromedp.Click(`li.device[data-id="`+iotID+`"]`, chromedp.ByQuery))
	turnOn := `[data-thing="Lamp"] form[data-method="TurnOn"] button`
	b.waitJS("the lamp's methods", `document.querySelector('`+turnOn+`')`)
	b.run(chromedp.Click(turnOn, chromedp.ByQuery))
	waitFor(t, "the IoT lamp to be on", iot.LampOn)
	b.waitJS("the lamp's state shown", `/"power":\s*true/.test(document.querySelector('[data-thing="Lamp"] pre.state').textContent)`)
	b.shot("iot")

	// Deleting a device asks first.
	b.run(chromedp.Click(`#detail button.delete`, chromedp.ByQuery))
	b.waitJS("the delete confirmation", `document.querySelector("#confirm").open`)
	b.run(chromedp.Click(`#confirmOk`, chromedp.ByQuery))
	b.waitJS("the device gone from the list", `!document.querySelector('li.device[data-id="`+iotID+`"]')`)

	// Revoking a token asks first.
	b.run(chromedp.Click(`li.device[data-id="`+mcpID+`"]`, chromedp.ByQuery))
	b.waitJS("the device's panel", `document.querySelector("#detail button.revoke")`)
	b.run(chromedp.Click(`#detail button.revoke`, chromedp.ByQuery))
	b.waitJS("the revoke confirmation", `document.querySelector("#confirm").open && document.querySelector("#confirmText").textContent.includes("cannot be undone")`)
	b.run(chromedp.Click(`#confirmOk`, chromedp.ByQuery))
	b.waitJS("the revocation", `document.querySelector("#detail").textContent.includes("token revoked")`)
	trust := apiCall(t, h, "GET", "/api/devices/"+mcpID+"/trust", nil)
	if !strings.Contains(strings.ToLower(jsonString(trust)), "revoked") {
		t.Fatalf("trust after revoking: %v", trust)
	}

	// Re-binding asks first, too.
	b.run(chromedp.Click(`#detail button.rebind`, chromedp.ByQuery))
	b.waitJS("the re-bind confirmation", `document.querySelector("#confirm").open && document.querySelector("#confirmText").textContent.includes("re-flashed")`)
	b.run(chromedp.Click(`#confirmOk`, chromedp.ByQuery))
	b.waitJS("the re-binding", `document.querySelector("#detail").textContent.includes("re-bound")`)

	// Keeping the device on WebSocket (when the hub offers MQTT).
	var ok bool
	b.eval(`(() => { const s = document.querySelector("#detail select.transport"); s.value = "websocket"; s.dispatchEvent(new Event("change")); return true })()`, &ok)
	b.waitJS("the transport saved", `document.querySelector("#detail").textContent.includes("next boot")`)
	if tr := apiCall(t, h, "GET", "/api/devices/"+mcpID+"/trust", nil); tr["transport"] != "websocket" {
		t.Fatalf("trust after keeping on WebSocket: %v", tr)
	}

	// The agent's chat says what is missing when no LLM is configured.
	b.run(chromedp.SendKeys("#chatInput", "turn on the lamp", chromedp.ByQuery),
		chromedp.Click(`#chatForm button`, chromedp.ByQuery))
	b.waitJS("the agent's answer", `document.querySelector("#chatLog .msg.err")`)
	b.shot("desktop")
}

// Typing into a tool form survives other devices coming online and events
// about the device itself.
func TestBrowserKeepsWhatIsTyped(t *testing.T) {
	h := startHub(t, nil)
	connect(t, h, sim.Config{DeviceID: mcpID})
	b := newBrowser(t, h.URL(), 1280, "en-US")
	b.login()
	b.run(chromedp.Click(`li.device[data-id="`+mcpID+`"]`, chromedp.ByQuery))
	input := `.tool[data-tool="self.audio_speaker.set_volume"] input[name=volume]`
	b.waitJS("the volume form", `document.querySelector('`+input+`')`)
	b.waitJS("the live stream", `document.querySelector("#status").textContent === "live"`)
	b.run(chromedp.Click(input, chromedp.ByQuery), chromedp.SendKeys(input, "37", chromedp.ByQuery))

	connect(t, h, sim.Config{DeviceID: iotID, Mode: sim.ModeIoT})
	b.waitJS("the other device listed", `document.querySelectorAll("li.device").length === 2`)
	apiCall(t, h, "PATCH", "/api/devices/"+mcpID, map[string]any{"room": "study"})
	b.waitJS("the panel refreshed by the device's own event", `document.querySelector("#detail .dev-room").value === "study"`)

	var state struct {
		Value   string `json:"value"`
		Focused bool   `json:"focused"`
	}
	b.eval(`(() => { const i = document.querySelector('`+input+`'); return {value: i.value, focused: document.activeElement === i}; })()`, &state)
	if state.Value != "37" || !state.Focused {
		b.shot("erased")
		t.Fatalf("after two device events the volume input is %+v, want the typed 37 with focus", state)
	}
}

// otaDevice provisions a simulated device through the OTA check and its
// activation code, in the background; done reports Provision's error.
func otaDevice(t *testing.T, h *server.Hub, id string) (code string, done <-chan error) {
	t.Helper()
	codes := make(chan string, 1)
	d := sim.New(sim.Config{DeviceID: id, OTAURL: h.OTAURL(), Board: "esp-box-3",
		// The hub allows an address 2 OTA requests a second (burst 30):
		// two devices polling every 1.5 s stay below it.
		ActivationPoll: 1500 * time.Millisecond, ActivationRetry: 1500 * time.Millisecond,
		OnActivation: func(c, _ string) {
			select {
			case codes <- c:
			default:
			}
		}})
	ctx, cancel := context.WithCancel(context.Background())
	errs := make(chan error, 1)
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		_, err := d.Provision(ctx)
		errs <- err
	}()
	t.Cleanup(func() { cancel(); <-finished; d.Close() })
	select {
	case code = <-codes:
	case <-time.After(20 * time.Second):
		t.Fatalf("%s showed no activation code", id)
	}
	return code, errs
}

// Approving devices from the dashboard: the row shows its expiry, what is
// typed into it survives a new device appearing, and "approve all"
// approves every device with the names typed.
func TestBrowserApproval(t *testing.T) {
	h := startHub(t, func(c *server.Config) { c.DeviceAuth = "activation" })
	const a, second = "ac:00:00:00:0b:01", "ac:00:00:00:0b:02"
	codeA, doneA := otaDevice(t, h, a)
	b := newBrowser(t, h.URL(), 1280, "en-US")
	b.login()
	row := `li.act[data-code="` + codeA + `"]`
	b.waitJS("the pending device", `document.querySelector('`+row+`')`)
	b.waitJS("its expiry", `document.querySelector('`+row+`').textContent.includes("expires in")`)
	b.run(chromedp.Click(row+` .act-name`, chromedp.ByQuery), chromedp.SendKeys(row+` .act-name`, "Study speaker", chromedp.ByQuery))

	_, doneB := otaDevice(t, h, second)
	b.waitJS("the second pending device", `document.querySelectorAll("li.act").length === 2`)
	var kept bool
	b.eval(`(() => { const i = document.querySelector('`+row+` .act-name'); return i.value === "Study speaker" && document.activeElement === i; })()`, &kept)
	if !kept {
		b.shot("erased")
		t.Fatal("the name typed into the approval row was lost (or lost focus) when another device appeared")
	}
	b.shot("approvals")
	b.run(chromedp.Click("#approveAll", chromedp.ByQuery))
	b.waitJS("the confirmation", `document.querySelector("#confirm").open`)
	b.run(chromedp.Click("#confirmOk", chromedp.ByQuery))
	for _, done := range []<-chan error{doneA, doneB} {
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("provision: %v", err)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("a device was not approved")
		}
	}
	if dev := apiCall(t, h, "GET", "/api/devices/"+a, nil); dev["name"] != "Study speaker" {
		t.Fatalf("approved device: %v", dev)
	}
	b.waitJS("the list emptied", `document.querySelectorAll("li.act").length === 0`)
}

// In a Chinese browser the page is in Chinese; at phone width nothing
// scrolls sideways, the token button is on screen, and a tapped device
// opens where the eye is. Long device text wraps at desktop width too.
func TestBrowserChinesePhoneWidth(t *testing.T) {
	h := startHub(t, nil)
	connect(t, h, sim.Config{DeviceID: mcpID, Lamp: true})
	long := "客厅的灯" + strings.Repeat("x", 60) // names hold 64 characters
	b := newBrowser(t, h.URL(), 390, "zh-CN")
	var labels struct{ Lang, Devices, Use, Title string }
	b.eval(`({lang: document.documentElement.lang, devices: document.querySelector('[data-i18n="devices.title"]').textContent,
		use: document.querySelector("#save").textContent, title: document.querySelector('[data-i18n="act.title"]').textContent})`, &labels)
	if labels.Lang != "zh-CN" || labels.Devices != "设备" || labels.Use != "使用" || labels.Title != "等待批准" {
		t.Fatalf("a zh-CN browser sees %+v", labels)
	}
	var missing []string
	b.eval(`[...Object.keys(MESSAGES.en).filter(k => !(k in MESSAGES.zh)),
		...[...document.querySelectorAll("[data-i18n]")].map(e => e.dataset.i18n).filter(k => !(k in MESSAGES.en))]`, &missing)
	if len(missing) > 0 {
		t.Fatalf("messages without a translation: %v", missing)
	}
	b.login()
	b.waitJS("the device listed", `document.querySelector('li.device[data-id="`+mcpID+`"]')`)
	// The event stream subscribes before it answers: once it is live, no
	// change is missed (a change made before showed in the list, not in
	// the events).
	b.waitJS("the live stream", `document.querySelector("#status").textContent === "实时"`)
	apiCall(t, h, "PATCH", "/api/devices/"+mcpID, map[string]any{"name": long})
	b.waitJS("the long name shown", `document.querySelector("li.device strong").textContent.length === 64`)
	b.waitJS("the event in Chinese", `document.querySelector("#events").textContent.includes("已更新")`)
	b.shot("zh-390-list")
	checkFits(t, b, 390)
	var tokenButton bool
	b.eval(`(() => { const r = document.querySelector("#save").getBoundingClientRect(); return r.width > 0 && r.left >= 0 && r.right <= innerWidth && r.top >= 0; })()`, &tokenButton)
	if !tokenButton {
		t.Fatal("the token button is not on screen at 390 px")
	}
	b.run(chromedp.Click(`li.device[data-id="`+mcpID+`"]`, chromedp.ByQuery))
	b.waitJS("the tools", `document.querySelector('.tool[data-tool="self.audio_speaker.set_volume"]')`)
	b.waitJS("the tapped device in view", `(() => { const r = document.querySelector("#detail").getBoundingClientRect(); return r.top >= -1 && r.top < innerHeight / 2; })()`)
	b.shot("zh-390-device")
	checkFits(t, b, 390)

	// The switch changes the language and is remembered.
	b.run(chromedp.SetValue("#lang", "en", chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelector("#lang").dispatchEvent(new Event("change"))`, nil))
	b.waitJS("English labels", `document.querySelector("#save").textContent === "Use"`)
	b.run(chromedp.Reload(), chromedp.WaitReady("#token", chromedp.ByQuery))
	b.waitJS("English remembered", `document.querySelector("#save").textContent === "Use" && document.documentElement.lang === "en"`)
	b.shot("en-390")

	desk := newBrowser(t, h.URL(), 1280, "zh-CN")
	desk.login()
	desk.waitJS("the long name", `document.querySelector("li.device strong")`)
	desk.run(chromedp.Click(`li.device[data-id="`+mcpID+`"]`, chromedp.ByQuery))
	desk.waitJS("the tools", `document.querySelector('.tool[data-tool="self.audio_speaker.set_volume"]')`)
	desk.waitJS("the live stream", `document.querySelector("#status").textContent === "实时"`)
	apiCall(t, h, "PATCH", "/api/devices/"+mcpID, map[string]any{"room": strings.Repeat("room", 16)})
	desk.waitJS("the long event", `document.querySelector("#events").textContent.includes("已更新")`)
	desk.shot("zh-1280")
	checkFits(t, desk, 1280)

	// The narrowest phones and the widest screens people use.
	for _, w := range []int{360, 1920} {
		b := newBrowser(t, h.URL(), w, "en-US")
		b.login()
		b.run(chromedp.Click(`li.device[data-id="`+mcpID+`"]`, chromedp.ByQuery))
		b.waitJS("the tools", `document.querySelector('.tool[data-tool="self.audio_speaker.set_volume"]')`)
		b.shot(fmt.Sprintf("en-%d", w))
		checkFits(t, b, w)
	}
}

// checkFits fails when the page is wider than the viewport.
func checkFits(t *testing.T, b *browser, width int) {
	t.Helper()
	var w int
	b.eval(`document.scrollingElement.scrollWidth`, &w)
	if w > width {
		b.shot("too-wide")
		t.Fatalf("the page is %d px wide in a %d px viewport", w, width)
	}
}

func countOf(list []string, s string) int {
	return len(slices.DeleteFunc(slices.Clone(list), func(x string) bool { return x != s }))
}

func jsonString(v any) string { b, _ := json.Marshal(v); return string(b) }
