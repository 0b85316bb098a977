package dashboard_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/xiaozhi-hub/hub/server"
	"github.com/xiaozhi-hub/hub/server/servertest"
	"github.com/xiaozhi-hub/hub/sim"
)

// Several people on one hub, as they meet the dashboard (issue 21): the
// sign-in form and its cookie, each person's homes and only their devices,
// members and roles, adding a device by its code, personal tokens, and
// the admin's view of users, homes and devices in no home.

const peoplePassword = "correct horse 1"

// apiAs calls the REST API with a bearer token ("" for none) and returns
// the status and the decoded body.
func apiAs(t *testing.T, h *server.Hub, token, method, path string, body any) (int, map[string]any) {
	t.Helper()
	var rd *bytes.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	} else {
		rd = bytes.NewReader(nil)
	}
	req, _ := http.NewRequest(method, h.URL()+path, rd)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out map[string]any
	json.NewDecoder(res.Body).Decode(&out)
	return res.StatusCode, out
}

// mustAs is apiAs that fails the test on a status of 300 or more.
func mustAs(t *testing.T, h *server.Hub, token, method, path string, body any) map[string]any {
	t.Helper()
	code, out := apiAs(t, h, token, method, path, body)
	if code >= 300 {
		t.Fatalf("%s %s = %d %v", method, path, code, out)
	}
	return out
}

// person makes a user (with the admin token) and returns a login token of
// theirs for the API.
func person(t *testing.T, h *server.Hub, name string) string {
	t.Helper()
	mustAs(t, h, servertest.Token, "POST", "/api/users", map[string]any{"name": name, "password": peoplePassword})
	return loginToken(t, h, name, peoplePassword)
}

func loginToken(t *testing.T, h *server.Hub, name, password string) string {
	t.Helper()
	out := mustAs(t, h, "", "POST", "/api/login", map[string]any{"name": name, "password": password})
	tok, _ := out["token"].(string)
	if tok == "" {
		t.Fatalf("login %s: no token in %v", name, out)
	}
	return tok
}

// home creates a home as the user of token and returns its id.
func home(t *testing.T, h *server.Hub, token, name string) string {
	t.Helper()
	id, _ := mustAs(t, h, token, "POST", "/api/homes", map[string]any{"name": name})["id"].(string)
	if id == "" {
		t.Fatalf("home %s has no id", name)
	}
	return id
}

// putIn puts an existing device in a home, as the admin.
func putIn(t *testing.T, h *server.Hub, homeID, device string) {
	t.Helper()
	mustAs(t, h, servertest.Token, "POST", "/api/homes/"+homeID+"/devices", map[string]any{"device": device})
}

// openSignedOut opens the dashboard in a browser of its own (its own
// cookies) and waits for the sign-in page.
func openSignedOut(t *testing.T, h *server.Hub, width int, lang string) *browser {
	t.Helper()
	b := newBrowser(t, h.URL(), width, lang)
	b.waitJS("the sign-in page", `document.body.dataset.auth === "out" && document.querySelector("#loginName").offsetParent !== null`)
	return b
}

// signIn fills the sign-in form as a person does.
func (b *browser) signIn(name, password string) {
	b.t.Helper()
	b.run(
		chromedp.SendKeys("#loginName", name, chromedp.ByQuery),
		chromedp.SendKeys("#loginPassword", password, chromedp.ByQuery),
		chromedp.Click("#loginButton", chromedp.ByQuery),
	)
	b.waitJS("signed in as "+name, `document.body.dataset.auth === "session" && document.querySelector("#who").textContent.includes(`+jsString(name)+`)`)
}

// choose picks an option of a select by value, as a person does.
func (b *browser) choose(sel, value string) {
	b.t.Helper()
	b.run(chromedp.SetValue(sel, value, chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelector(`+jsString(sel)+`).dispatchEvent(new Event("change"))`, nil))
}

// listed is the JavaScript list of the device ids the page lists.
const listed = `[...document.querySelectorAll("li.device")].map(li => li.dataset.id).sort().join(" ")`

func jsString(s string) string { b, _ := json.Marshal(s); return string(b) }

const (
	devA1 = "cc:00:00:00:21:01" // alice's home A
	devA2 = "cc:00:00:00:21:02" // alice's second home, the cabin
	devB  = "cc:00:00:00:21:03" // bob's home
)

// Alice signs in with the form and sees her two homes' devices, never
// Bob's; she switches homes and adds Carol as a guest; Carol sees home A
// and its device with no member or device controls; Carol's access ends
// when the admin removes her, and the page goes back to the sign-in page;
// Alice signs out.
func TestBrowserPeopleHomesAndMembers(t *testing.T) {
	h := startHub(t, nil)
	alice, bob := person(t, h, "alice"), person(t, h, "bob")
	person(t, h, "carol")
	homeA, cabin, homeB := home(t, h, alice, "A家"), home(t, h, alice, "Cabin"), home(t, h, bob, "B home")
	for dev, in := range map[string]string{devA1: homeA, devA2: cabin, devB: homeB} {
		connect(t, h, sim.Config{DeviceID: dev})
		putIn(t, h, in, dev)
	}

	b := openSignedOut(t, h, 1280, "en-US")
	b.signIn("alice", peoplePassword)
	var kept struct {
		Cookie, Token string
	}
	b.eval(`({cookie: document.cookie, token: localStorage.getItem("xiaozhi-hub-token") || ""})`, &kept)
	if strings.Contains(kept.Cookie, "xzh_session") || kept.Token != "" {
		t.Fatalf("the session is readable by the page: %+v (want an HttpOnly cookie and no stored token)", kept)
	}
	b.waitJS("alice's two homes' devices", listed+` === "`+devA1+" "+devA2+`"`)
	b.waitJS("the live stream", `document.querySelector("#status").textContent === "live"`)
	b.shot("alice-all")

	// Home A alone.
	b.choose("#homeSel", homeA)
	b.waitJS("home A's device only", listed+` === "`+devA1+`"`)
	b.waitJS("alice is its owner", `document.querySelector("#homeRole").textContent === "owner"`)
	b.waitJS("the member controls", `document.querySelector("#addMember").offsetParent && document.querySelector('#members li[data-user="alice"] select.member-role')`)

	// Alice adds Carol as a guest, then Bob as a member and changes him to a
	// guest; the hub has them so.
	b.run(chromedp.SendKeys("#memberName", "carol", chromedp.ByQuery))
	b.choose("#memberRole", "guest")
	b.run(chromedp.Click(`#addMember button[type=submit]`, chromedp.ByQuery))
	b.waitJS("carol listed as a guest", `document.querySelector('#members li[data-user="carol"] select.member-role')?.value === "guest"`)
	b.run(chromedp.SendKeys("#memberName", "bob", chromedp.ByQuery))
	b.choose("#memberRole", "member")
	b.run(chromedp.Click(`#addMember button[type=submit]`, chromedp.ByQuery))
	b.waitJS("bob listed", `document.querySelector('#members li[data-user="bob"] select.member-role')?.value === "member"`)
	b.choose(`#members li[data-user="bob"] select.member-role`, "guest")
	waitFor(t, "bob a guest of home A", func() bool {
		return strings.Contains(jsonString(mustAs(t, h, alice, "GET", "/api/homes/"+homeA, nil)["members"]), `{"role":"guest","user":"bob"}`)
	})
	b.shot("members")

	// Carol, a guest, in her own browser: home A and its device, no controls.
	c := openSignedOut(t, h, 1280, "en-US")
	c.signIn("carol", peoplePassword)
	c.waitJS("home A's device", listed+` === "`+devA1+`"`)
	c.waitJS("carol's role", `document.querySelector("#homeRole").textContent === "guest"`)
	var controls struct {
		AddMember, AddDevice, MemberControls bool
	}
	c.eval(`({addMember: !!document.querySelector("#addMember").offsetParent, addDevice: !!document.querySelector("#addDevice").offsetParent,
		memberControls: !!document.querySelector("#members select, #members button")})`, &controls)
	if controls.AddMember || controls.AddDevice || controls.MemberControls {
		c.shot("guest-controls")
		t.Fatalf("a guest sees controls: %+v", controls)
	}
	c.run(chromedp.Click(`li.device[data-id="`+devA1+`"]`, chromedp.ByQuery))
	c.waitJS("the device's tools", `document.querySelector('.tool[data-tool="self.audio_speaker.set_volume"]')`)
	var manage bool
	c.eval(`!!document.querySelector("#detail .manage")?.offsetParent || !!document.querySelector("#detail .delete")?.offsetParent`, &manage)
	if manage {
		t.Fatal("a guest sees the device's rename, delete, revoke and re-bind controls")
	}
	c.shot("guest")

	// The admin removes Carol: her page is back at the sign-in page.
	c.waitJS("carol's live stream", `document.querySelector("#status").textContent === "live"`)
	mustAs(t, h, servertest.Token, "DELETE", "/api/users/carol", nil)
	c.waitJS("carol back at the sign-in page", `document.body.dataset.auth === "out" && !document.querySelector("li.device")`)

	// Alice takes the cabin's device out of it, then deletes the empty cabin.
	b.choose("#homeSel", cabin)
	b.waitJS("the cabin's device", listed+` === "`+devA2+`"`)
	b.run(chromedp.Click(`li.device[data-id="`+devA2+`"]`, chromedp.ByQuery))
	b.waitJS("take out of this home", `document.querySelector("#detail .leave-home")`)
	b.run(chromedp.Click("#detail .leave-home", chromedp.ByQuery))
	b.waitJS("the confirmation", `document.querySelector("#confirm").open && document.querySelector("#confirmText").textContent.includes("Cabin")`)
	b.run(chromedp.Click("#confirmOk", chromedp.ByQuery))
	b.waitJS("the device gone from alice's list", `!document.querySelector('li.device[data-id="`+devA2+`"]') && document.querySelector("#detail").textContent.includes("no longer in Cabin")`)
	if d := mustAs(t, h, servertest.Token, "GET", "/api/devices/"+devA2, nil); d["home"] != nil {
		t.Fatalf("the device taken out of the cabin: %v", d)
	}
	b.run(chromedp.Click("#deleteHome", chromedp.ByQuery))
	b.waitJS("the confirmation", `document.querySelector("#confirm").open && document.querySelector("#confirmText").textContent.includes("Cabin")`)
	b.run(chromedp.Click("#confirmOk", chromedp.ByQuery))
	b.waitJS("the cabin gone", `!document.querySelector('#homeSel option[value="`+cabin+`"]')`)

	// Alice signs out; a reload stays signed out.
	b.run(chromedp.Click("#logout", chromedp.ByQuery))
	b.waitJS("the sign-in page", `document.body.dataset.auth === "out"`)
	b.run(chromedp.Reload())
	b.waitJS("still signed out after a reload", `document.body.dataset.auth === "out"`)
}

// Bob, a member of Alice's home: he sees its members and adds devices,
// renames one, but changes no member and neither deletes nor revokes a
// device (an owner's).
func TestBrowserPeopleMember(t *testing.T) {
	h := startHub(t, nil)
	alice := person(t, h, "alice")
	person(t, h, "bob")
	homeA := home(t, h, alice, "A家")
	mustAs(t, h, alice, "POST", "/api/homes/"+homeA+"/members", map[string]any{"user": "bob", "role": "member"})
	connect(t, h, sim.Config{DeviceID: devA1})
	putIn(t, h, homeA, devA1)

	b := openSignedOut(t, h, 1280, "en-US")
	b.signIn("bob", peoplePassword)
	b.waitJS("home A's device", listed+` === "`+devA1+`"`)
	b.waitJS("the members", `document.querySelector('#members li[data-user="alice"]') && document.querySelector("#homeRole").textContent === "member"`)
	var seen struct{ AddMember, AddDevice, MemberControls bool }
	b.eval(`({addMember: !!document.querySelector("#addMember").offsetParent, addDevice: !!document.querySelector("#addDevice").offsetParent,
		memberControls: !!document.querySelector("#members select, #members button")})`, &seen)
	if seen.AddMember || !seen.AddDevice || seen.MemberControls {
		b.shot("member")
		t.Fatalf("a member sees %+v, want adding devices only", seen)
	}
	b.run(chromedp.Click(`li.device[data-id="`+devA1+`"]`, chromedp.ByQuery))
	b.waitJS("the device's panel", `document.querySelector("#detail .dev-name")?.offsetParent`)
	var owners bool
	b.eval(`["delete", "revoke", "leave-home"].some(c => document.querySelector("#detail ." + c)?.offsetParent)`, &owners)
	if owners {
		t.Fatal("a member sees an owner's device controls")
	}
	b.run(chromedp.SendKeys("#detail .dev-name", "Kitchen", chromedp.ByQuery), chromedp.Click(`#detail form button[type=submit]`, chromedp.ByQuery))
	b.waitJS("renamed", `document.querySelector("li.device strong").textContent === "Kitchen"`)
}

// Alice adds a device by the code it speaks, makes a personal token that
// is shown once and works, and revokes it.
func TestBrowserPeopleAddDeviceAndTokens(t *testing.T) {
	h := startHub(t, func(c *server.Config) { c.DeviceAuth = "activation" })
	alice := person(t, h, "alice")
	homeA := home(t, h, alice, "A家")
	const dev = "cc:00:00:00:21:11"
	code, done := otaDevice(t, h, dev)

	b := openSignedOut(t, h, 1280, "en-US")
	b.signIn("alice", peoplePassword)
	b.waitJS("home A chosen", `document.querySelector("#homeSel").value === `+jsString(homeA))
	b.run(chromedp.SendKeys("#deviceCode", code, chromedp.ByQuery),
		chromedp.Click(`#addDevice button[type=submit]`, chromedp.ByQuery))
	b.waitJS("the device added", `document.querySelector("#homeOut .device-added")`)
	if err := <-done; err != nil {
		t.Fatalf("the device added by its code was not provisioned: %v", err)
	}
	b.waitJS("the device listed", listed+` === "`+dev+`"`)
	if d := mustAs(t, h, alice, "GET", "/api/devices/"+dev, nil); d["home"] != homeA {
		t.Fatalf("the device added by code: %v", d)
	}

	// A personal token: shown once, with a copy button; it works.
	b.run(chromedp.SendKeys("#newTokenName", "script", chromedp.ByQuery),
		chromedp.Click(`#newToken button[type=submit]`, chromedp.ByQuery))
	b.waitJS("the secret shown", `document.querySelector("#tokenSecretText").textContent.startsWith("xzu_") && document.querySelector("#tokenCopy").offsetParent`)
	var secret string
	b.eval(`document.querySelector("#tokenSecretText").textContent`, &secret)
	b.waitJS("the token listed", `[...document.querySelectorAll('#tokens li[data-kind="personal"]')].some(li => li.textContent.includes("script"))`)
	if list := mustAs(t, h, secret, "GET", "/api/devices", nil); !strings.Contains(jsonString(list), dev) {
		t.Fatalf("the personal token does not list alice's device: %v", list)
	}
	b.shot("token")
	b.run(chromedp.Reload())
	b.waitJS("the tokens after a reload", `document.querySelector('#tokens li[data-kind="personal"]')`)
	var shown bool
	b.eval(`document.documentElement.innerHTML.includes(`+jsString(secret)+`) || !document.querySelector("#tokenSecret").hidden`, &shown)
	if shown {
		t.Fatal("the token's secret is shown again after a reload")
	}

	// Revoked, after a confirmation: it stops working.
	b.run(chromedp.Click(`#tokens li[data-kind="personal"] .token-revoke`, chromedp.ByQuery))
	b.waitJS("the confirmation", `document.querySelector("#confirm").open && document.querySelector("#confirmText").textContent.includes("script")`)
	b.run(chromedp.Click("#confirmOk", chromedp.ByQuery))
	b.waitJS("the token gone", `!document.querySelector('#tokens li[data-kind="personal"]')`)
	if code, _ := apiAs(t, h, secret, "GET", "/api/devices", nil); code != http.StatusUnauthorized {
		t.Fatalf("a revoked personal token = %d, want 401", code)
	}
}

// The admin, with the admin token: creates a user, sets their password,
// puts a device in no home into a home, sees every home, removes the user.
func TestBrowserPeopleAdmin(t *testing.T) {
	h := startHub(t, nil)
	alice := person(t, h, "alice")
	homeA := home(t, h, alice, "A家")
	const dev = "cc:00:00:00:21:21"
	connect(t, h, sim.Config{DeviceID: dev})

	b := newBrowser(t, h.URL(), 1280, "en-US")
	b.login()
	b.waitJS("the admin's view", `!document.querySelector("#adminBox").hidden && document.querySelector('#users li[data-user="alice"]')`)
	b.waitJS("every home", `document.querySelector('#allHomes li[data-home="`+homeA+`"]')`)

	// A password too short is refused before it is sent; then dave.
	b.run(chromedp.SendKeys("#newUserName", "dave", chromedp.ByQuery), chromedp.SendKeys("#newUserPassword", "short", chromedp.ByQuery))
	var valid bool
	b.eval(`document.querySelector("#newUserPassword").checkValidity()`, &valid)
	if valid {
		t.Fatal("the password field accepts a password shorter than 8")
	}
	b.run(chromedp.SetValue("#newUserPassword", peoplePassword, chromedp.ByQuery),
		chromedp.Click(`#newUser button[type=submit]`, chromedp.ByQuery))
	b.waitJS("dave listed", `document.querySelector('#users li[data-user="dave"]')`)
	loginToken(t, h, "dave", peoplePassword)

	// A new password for dave.
	const next = "another secret 2"
	row := `#users li[data-user="dave"]`
	b.run(chromedp.SendKeys(row+" .user-password", next, chromedp.ByQuery), chromedp.Click(row+" .user-reset", chromedp.ByQuery))
	b.waitJS("the password set", `document.querySelector('`+row+`').textContent.includes("password set")`)
	loginToken(t, h, "dave", next)

	// The device in no home, put in home A.
	b.waitJS("the device in no home", `document.querySelector('#homeless li[data-id="`+dev+`"]')`)
	b.choose(`#homeless li[data-id="`+dev+`"] select`, homeA)
	b.run(chromedp.Click(`#homeless li[data-id="`+dev+`"] .homeless-put`, chromedp.ByQuery))
	b.waitJS("no device in no home", `!document.querySelector('#homeless li[data-id]')`)
	if d := mustAs(t, h, alice, "GET", "/api/devices/"+dev, nil); d["home"] != homeA {
		t.Fatalf("the device put in home A: %v", d)
	}
	b.shot("admin")

	// Removing dave, after a confirmation.
	b.run(chromedp.Click(row+" .user-remove", chromedp.ByQuery))
	b.waitJS("the confirmation", `document.querySelector("#confirm").open`)
	b.run(chromedp.Click("#confirmOk", chromedp.ByQuery))
	b.waitJS("dave gone", `!document.querySelector('`+row+`')`)
	if code, _ := apiAs(t, h, "", "POST", "/api/login", map[string]any{"name": "dave", "password": next}); code != http.StatusUnauthorized {
		t.Fatalf("a removed user's login = %d, want 401", code)
	}
}

// Wrong passwords: the form says so, and after too many it shows the wait.
func TestBrowserPeopleLoginWait(t *testing.T) {
	h := startHub(t, nil)
	person(t, h, "alice")
	b := openSignedOut(t, h, 1280, "en-US")
	b.run(chromedp.SendKeys("#loginName", "alice", chromedp.ByQuery))
	for i := 0; ; i++ {
		if i == 20 {
			t.Fatal("20 wrong passwords and no wait shown")
		}
		b.run(chromedp.SetValue("#loginPassword", "wrong password", chromedp.ByQuery), chromedp.Click("#loginButton", chromedp.ByQuery))
		b.waitJS("the answer", `document.querySelector("#loginError").textContent !== ""`)
		var msg string
		b.eval(`document.querySelector("#loginError").textContent`, &msg)
		if strings.Contains(msg, "try again in") {
			break
		}
		if msg != "Wrong name or password." {
			t.Fatalf("a wrong password shows %q", msg)
		}
		b.waitJS("the button back", `!document.querySelector("#loginButton").disabled`)
	}
	var disabled bool
	b.eval(`document.querySelector("#loginButton").disabled`, &disabled)
	if !disabled {
		t.Fatal("the sign-in button does not wait with the hub")
	}
	b.shot("wait")
}

// In Chinese at phone width: the sign-in page and the new sections are in
// Chinese and nothing scrolls sideways, for an owner with a token's secret
// shown and for the admin.
func TestBrowserPeopleChinesePhone(t *testing.T) {
	h := startHub(t, nil)
	alice := person(t, h, "alice")
	person(t, h, "bob")
	homeA := home(t, h, alice, "A家"+strings.Repeat("很长的名字", 10))
	home(t, h, alice, "Cabin")
	mustAs(t, h, alice, "POST", "/api/homes/"+homeA+"/members", map[string]any{"user": "bob", "role": "member"})
	connect(t, h, sim.Config{DeviceID: devA1})
	putIn(t, h, homeA, devA1)

	b := openSignedOut(t, h, 390, "zh-CN")
	var login struct{ Title, Button, Hint string }
	b.eval(`({title: document.querySelector('#loginBox h2').textContent, button: document.querySelector("#loginButton").textContent,
		hint: document.querySelector('[data-i18n="login.adminHint"]').textContent})`, &login)
	if login.Title != "登录" || login.Button != "登录" || !strings.Contains(login.Hint, "管理员") {
		t.Fatalf("the sign-in page in Chinese: %+v", login)
	}
	var missing []string
	b.eval(`Object.keys(MESSAGES.en).filter(k => !(k in MESSAGES.zh) || (/^(login|home|members|role|tokens|admin)\./.test(k) && MESSAGES.zh[k] === MESSAGES.en[k]))`, &missing)
	if len(missing) > 0 {
		t.Fatalf("messages without a Chinese translation: %v", missing)
	}
	b.shot("zh-390-signin")
	checkFits(t, b, 390)

	b.signIn("alice", peoplePassword)
	b.waitJS("the devices", listed+` === "`+devA1+`"`)
	b.waitJS("all homes in Chinese", `document.querySelector('#homeSel option[value=""]').textContent === "全部家庭"`)
	b.choose("#homeSel", homeA)
	b.waitJS("the members in Chinese", `document.querySelector("#homeRole").textContent === "所有者" && document.querySelector('#members li[data-user="bob"]')`)
	var texts struct{ Members, Tokens, Add string }
	b.eval(`({members: document.querySelector('[data-i18n="members.title"]').textContent, tokens: document.querySelector('[data-i18n="tokens.title"]').textContent,
		add: document.querySelector('#addMember button').textContent})`, &texts)
	if texts.Members != "成员" || texts.Tokens != "我的令牌" || texts.Add != "添加成员" {
		t.Fatalf("the home's sections in Chinese: %+v", texts)
	}
	b.run(chromedp.SendKeys("#newTokenName", "脚本", chromedp.ByQuery), chromedp.Click(`#newToken button[type=submit]`, chromedp.ByQuery))
	b.waitJS("the secret shown", `document.querySelector("#tokenSecretText").textContent.startsWith("xzu_")`)
	b.shot("zh-390-owner")
	checkFits(t, b, 390)

	a := newBrowser(t, h.URL(), 390, "zh-CN")
	a.login()
	a.waitJS("the admin's users", `document.querySelector('#users li[data-user="bob"]')`)
	a.waitJS("the admin's view in Chinese", `document.querySelector('[data-i18n="admin.users"]').textContent === "用户"`)
	a.shot("zh-390-admin")
	checkFits(t, a, 390)
}
