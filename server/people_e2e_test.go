package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/xiaozhi-hub/hub/server"
	"github.com/xiaozhi-hub/hub/sim"
)

// people is a hub with two homes and three people: alice owns home A,
// bob owns home B and is a guest in A, and the admin. Device devA is in A
// (with a tool that unlocks a door), devB in B.
type people struct {
	*testHub
	alice, bob   string // login tokens
	homeA, homeB string
	devA, devB   string
}

const (
	devA      = "aa:00:00:00:21:01"
	devB      = "aa:00:00:00:21:02"
	unknownID = "aa:00:00:00:21:ff"
)

var unlockTool = &sim.Tool{Name: "door.unlock", Description: "Unlock the front door."}

func newPeople(t *testing.T, edit func(*server.Config)) *people {
	t.Helper()
	h := startHub(t, "", edit)
	p := &people{testHub: h, devA: devA, devB: devB}
	p.addUser("alice")
	p.addUser("bob")
	p.alice, p.bob = p.login("alice"), p.login("bob")
	p.homeA = p.mustOK(p.alice, "POST", "/api/homes", map[string]any{"name": "A家"}, 201)["id"].(string)
	p.homeB = p.mustOK(p.bob, "POST", "/api/homes", map[string]any{"name": "B"}, 201)["id"].(string)
	p.mustOK(p.alice, "POST", "/api/homes/"+p.homeA+"/members", map[string]any{"user": "bob", "role": "guest"}, 200)
	return p
}

// devices connects devA and devB and puts each in its home (the admin
// moves existing devices).
func (p *people) devices() {
	p.t.Helper()
	p.device(sim.Config{DeviceID: devA}, unlockTool)
	p.device(sim.Config{DeviceID: devB})
	p.readyTools(devA)
	p.readyTools(devB)
	p.mustOK(p.Token, "POST", "/api/homes/"+p.homeA+"/devices", map[string]any{"device": devA}, 200)
	p.mustOK(p.Token, "POST", "/api/homes/"+p.homeB+"/devices", map[string]any{"device": devB}, 200)
}

func (p *people) addUser(name string) {
	p.t.Helper()
	p.mustOK(p.Token, "POST", "/api/users", map[string]any{"name": name, "password": name + "-password"}, 201)
}

func (p *people) login(name string) string {
	p.t.Helper()
	return p.mustOK("", "POST", "/api/login", map[string]any{"name": name, "password": name + "-password"}, 200)["token"].(string)
}

// mustOK makes a request that must answer status, and returns its body.
func (p *people) mustOK(token, method, path string, body any, status int) map[string]any {
	p.t.Helper()
	st, out := p.callWith(token, method, path, body)
	if st != status {
		p.t.Fatalf("%s %s: %d %v, want %d", method, path, st, out, status)
	}
	return out
}

// wantError checks a refusal's status and code, and returns its message.
func (p *people) wantError(token, method, path string, body any, status int, code string) string {
	p.t.Helper()
	st, out := p.callWith(token, method, path, body)
	if st != status || errCode(out) != code {
		p.t.Fatalf("%s %s: %d %v, want %d %s", method, path, st, out, status, code)
	}
	return errMessage(out)
}

func deviceIDs(body map[string]any) []string {
	var ids []string
	for _, d := range body["devices"].([]any) {
		ids = append(ids, d.(map[string]any)["id"].(string))
	}
	return ids
}

// A device of another home answers exactly as a device that does not
// exist, on every route that names one; lists and the call history leave
// it out.
func TestPeopleSeeOnlyTheirHomes(t *testing.T) {
	p := newPeople(t, nil)
	p.devices()
	if ids := deviceIDs(p.mustOK(p.alice, "GET", "/api/devices", nil, 200)); strings.Join(ids, ",") != devA {
		t.Fatalf("alice lists %v, want only %s", ids, devA)
	}
	if ids := deviceIDs(p.mustOK(p.bob, "GET", "/api/devices", nil, 200)); len(ids) != 2 {
		t.Fatalf("bob (owner of B, guest in A) lists %v", ids)
	}
	if ids := deviceIDs(p.mustOK(p.Token, "GET", "/api/devices", nil, 200)); len(ids) != 2 {
		t.Fatalf("the admin lists %v", ids)
	}
	for _, rt := range []struct{ method, path string }{
		{"GET", "/api/devices/%s"}, {"PATCH", "/api/devices/%s"}, {"DELETE", "/api/devices/%s"},
		{"GET", "/api/devices/%s/tools"}, {"GET", "/api/devices/%s/iot"}, {"GET", "/api/devices/%s/events"},
		{"POST", "/api/devices/%s/iot/commands"}, {"POST", "/api/devices/%s/tools/self.get_device_status/call"},
		{"GET", "/api/calls?device=%s"}, {"GET", "/api/devices/%s/trust"}, {"POST", "/api/devices/%s/token/revoke"},
		{"POST", "/api/devices/%s/rebind"}, {"DELETE", "/api/homes/" + p.homeA + "/devices/%s"},
	} {
		var body any
		switch rt.method {
		case "PATCH":
			body = map[string]any{"name": "mine now"}
		case "POST":
			body = map[string]any{"commands": []any{map[string]any{"name": "Lamp", "method": "TurnOn"}}}
			if strings.Contains(rt.path, "/call") || strings.Contains(rt.path, "token") || strings.Contains(rt.path, "rebind") {
				body = nil
			}
		}
		foreign := p.wantError(p.alice, rt.method, strings.Replace(rt.path, "%s", devB, 1), body, 404, "not_found")
		unknown := p.wantError(p.alice, rt.method, strings.Replace(rt.path, "%s", unknownID, 1), body, 404, "not_found")
		if strings.ReplaceAll(foreign, devB, "X") != strings.ReplaceAll(unknown, unknownID, "X") {
			t.Errorf("%s %s: a foreign device says %q, an unknown one %q", rt.method, rt.path, foreign, unknown)
		}
	}
	if st, _ := p.call("GET", "/api/devices/"+devB, nil); st != 200 {
		t.Fatalf("devB must still exist for the admin: %d", st)
	}

	// Calls, and who sees them in the history.
	call := func(token, dev string) {
		t.Helper()
		p.mustOK(token, "POST", "/api/devices/"+dev+"/tools/self.audio_speaker.set_volume/call", map[string]any{"arguments": map[string]any{"volume": 30}}, 200)
	}
	call(p.alice, devA)
	call(p.bob, devA)
	call(p.bob, devB)
	call(p.Token, devB)
	history := func(token string) (out []string) {
		t.Helper()
		for _, c := range p.mustOK(token, "GET", "/api/calls", nil, 200)["calls"].([]any) {
			m := c.(map[string]any)
			out = append(out, m["by"].(string)+"@"+m["deviceId"].(string))
		}
		return out
	}
	if got := strings.Join(history(p.alice), " "); got != "bob@"+devA+" alice@"+devA {
		t.Errorf("alice's history: %s", got)
	}
	if got := strings.Join(history(p.bob), " "); got != "admin@"+devB+" bob@"+devB+" bob@"+devA {
		t.Errorf("bob's history (a guest in A sees only his own calls there): %s", got)
	}
	if got := strings.Join(history(p.Token), " "); !strings.HasPrefix(got, "admin@"+devB+" bob@"+devB+" bob@"+devA+" alice@"+devA) {
		t.Errorf("the admin's history: %v", got)
	}
}

// Guests call tools but not those that unlock, reboot, upgrade or reset,
// and change nothing; members change devices but not the home's people;
// the hub-wide lists are the admin's.
func TestPeopleGuestAndMemberLimits(t *testing.T) {
	p := newPeople(t, nil)
	p.devices()
	msg := p.wantError(p.bob, "POST", "/api/devices/"+devA+"/tools/door.unlock/call", nil, 403, "forbidden")
	if !strings.Contains(msg, "guest") || !strings.Contains(msg, "unlock") {
		t.Errorf("the refusal does not say why: %q", msg)
	}
	p.mustOK(p.alice, "POST", "/api/devices/"+devA+"/tools/door.unlock/call", nil, 200)
	p.wantError(p.bob, "PATCH", "/api/devices/"+devA, map[string]any{"name": "x"}, 403, "forbidden")
	p.wantError(p.bob, "DELETE", "/api/devices/"+devA, nil, 403, "forbidden")
	p.wantError(p.bob, "POST", "/api/devices/"+devA+"/token/revoke", nil, 403, "forbidden")
	p.wantError(p.bob, "DELETE", "/api/homes/"+p.homeA+"/devices/"+devA, nil, 403, "forbidden")
	p.wantError(p.bob, "DELETE", "/api/homes/"+p.homeA+"/devices/"+devB, nil, 404, "not_found") // his, but not in A
	p.wantError(p.bob, "POST", "/api/homes/"+p.homeA+"/devices", map[string]any{"code": "123456"}, 403, "forbidden")
	p.wantError(p.bob, "POST", "/api/homes/"+p.homeA+"/members", map[string]any{"user": "bob", "role": "owner"}, 403, "forbidden")

	p.mustOK(p.alice, "POST", "/api/homes/"+p.homeA+"/members", map[string]any{"user": "bob", "role": "member"}, 200)
	p.mustOK(p.bob, "PATCH", "/api/devices/"+devA, map[string]any{"name": "Front door"}, 200)
	p.mustOK(p.bob, "POST", "/api/devices/"+devA+"/tools/door.unlock/call", nil, 200)
	p.wantError(p.bob, "POST", "/api/homes/"+p.homeA+"/members", map[string]any{"user": "bob", "role": "owner"}, 403, "forbidden")
	p.wantError(p.bob, "DELETE", "/api/homes/"+p.homeA+"/members/alice", nil, 403, "forbidden")
	p.wantError(p.bob, "PATCH", "/api/homes/"+p.homeA, map[string]any{"name": "Bob's"}, 403, "forbidden")
	p.wantError(p.bob, "DELETE", "/api/devices/"+devA, nil, 403, "forbidden")

	for _, path := range []string{"/api/activations", "/api/cluster", "/api/users"} {
		if msg := p.wantError(p.alice, "GET", path, nil, 403, "forbidden"); !strings.Contains(msg, "admin") {
			t.Errorf("%s: %q does not say who may", path, msg)
		}
	}
	p.wantError(p.alice, "POST", "/api/users", map[string]any{"name": "mallory", "password": "mallory-password"}, 403, "forbidden")
	p.wantError(p.alice, "DELETE", "/api/homes/"+p.homeA, nil, 409, "conflict")

	// The audit: the change and the call say who.
	evs := p.mustOK(p.Token, "GET", "/api/devices/"+devA+"/events?limit=100", nil, 200)["events"].([]any)
	var by []string
	for _, e := range evs {
		if m := e.(map[string]any); m["type"] == "device_updated" {
			by = append(by, m["by"].(string))
		}
	}
	if len(by) == 0 || by[0] != "bob" {
		t.Errorf("the device_updated events say %v, want bob's rename first", by)
	}
}

// Users: the admin makes them; names are unique, passwords long enough.
func TestPeopleUsers(t *testing.T) {
	p := newPeople(t, nil)
	p.wantError(p.Token, "POST", "/api/users", map[string]any{"name": "alice", "password": "another-password"}, 409, "conflict")
	p.wantError(p.Token, "POST", "/api/users", map[string]any{"name": "carol", "password": "short"}, 422, "invalid_argument")
	me := p.mustOK(p.bob, "GET", "/api/me", nil, 200)
	if me["user"] != "bob" || me["admin"] != false || len(me["homes"].([]any)) != 2 {
		t.Fatalf("me: %v", me)
	}
	homes := p.mustOK(p.bob, "GET", "/api/homes", nil, 200)["homes"].([]any)
	if len(homes) != 2 || !strings.Contains(toJSON(homes), `"role":"guest"`) || !strings.Contains(toJSON(homes), `"role":"owner"`) {
		t.Fatalf("bob's homes: %v", homes)
	}
	if v := p.mustOK(p.alice, "PATCH", "/api/homes/"+p.homeA, map[string]any{"name": "A 家"}, 200); v["name"] != "A 家" {
		t.Fatalf("rename: %v", v)
	}

	// Passwords: one's own with the current one (keeping the login in
	// use, ending the others); the admin sets anyone's.
	other := p.login("alice")
	pw := func(token, user, current, password string) (int, map[string]any) {
		return p.callWith(token, "PUT", "/api/users/"+user+"/password", map[string]any{"current": current, "password": password})
	}
	if st, _ := pw(p.alice, "alice", "wrong-password", "alice-new-password"); st != 403 {
		t.Fatalf("a wrong current password: %d", st)
	}
	if st, _ := pw(p.alice, "bob", "alice-password", "bob-new-password"); st != 403 {
		t.Fatalf("another's password: %d", st)
	}
	if st, body := pw(p.alice, "alice", "alice-password", "alice-new-password"); st != 204 {
		t.Fatalf("her own password: %d %v", st, body)
	}
	p.mustOK(p.alice, "GET", "/api/me", nil, 200)
	p.wantError(other, "GET", "/api/me", nil, 401, "unauthorized")
	if st, body := pw(p.Token, "bob", "", "bob-new-password"); st != 204 {
		t.Fatalf("the admin sets bob's: %d %v", st, body)
	}
	p.wantError(p.bob, "GET", "/api/me", nil, 401, "unauthorized")
	p.bob = p.mustOK("", "POST", "/api/login", map[string]any{"name": "bob", "password": "bob-new-password"}, 200)["token"].(string)

	// Removing a user ends their access at once.
	p.mustOK(p.Token, "DELETE", "/api/users/bob", nil, 204)
	p.wantError(p.bob, "GET", "/api/me", nil, 401, "unauthorized")
	if homes := p.mustOK(p.alice, "GET", "/api/homes/"+p.homeA, nil, 200)["members"].([]any); len(homes) != 1 {
		t.Errorf("bob is still a member of A: %v", homes)
	}
}

// A personal token works until it is revoked, then not at all.
func TestPeopleTokenRevocationEndsAccess(t *testing.T) {
	p := newPeople(t, nil)
	made := p.mustOK(p.alice, "POST", "/api/tokens", map[string]any{"name": "backup"}, 201)
	tok := made["token"].(string)
	if me := p.mustOK(tok, "GET", "/api/me", nil, 200); me["actor"] != "alice (token backup)" {
		t.Fatalf("me with the token: %v", me)
	}
	list := p.mustOK(p.alice, "GET", "/api/tokens", nil, 200)["tokens"].([]any)
	if len(list) != 2 || strings.Contains(toJSON(list), tok) {
		t.Fatalf("tokens: %v", list)
	}
	p.wantError(p.bob, "DELETE", "/api/tokens/"+made["id"].(string), nil, 404, "not_found")
	p.mustOK(p.alice, "DELETE", "/api/tokens/"+made["id"].(string), nil, 204)
	p.wantError(tok, "GET", "/api/me", nil, 401, "unauthorized")
}

func toJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// rawCall is an API request with headers, answering the response.
func (p *people) rawCall(method, path, body string, header map[string]string) (*http.Response, string) {
	p.t.Helper()
	req, err := http.NewRequest(method, p.URL()+path, strings.NewReader(body))
	if err != nil {
		p.t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		p.t.Fatal(err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	return res, string(bytes.TrimSpace(data))
}

// Logins: the same 401 for an unknown name and a wrong password, then 429
// with Retry-After.
func TestPeopleLoginLimits(t *testing.T) {
	p := newPeople(t, nil)
	res1, wrong := p.rawCall("POST", "/api/login", `{"name":"alice","password":"not-her-password"}`, nil)
	res2, unknown := p.rawCall("POST", "/api/login", `{"name":"nobody","password":"not-her-password"}`, nil)
	if res1.StatusCode != 401 || res2.StatusCode != 401 || wrong != unknown {
		t.Fatalf("wrong password: %d %s; unknown name: %d %s", res1.StatusCode, wrong, res2.StatusCode, unknown)
	}
	var res *http.Response
	for range 20 {
		if res, _ = p.rawCall("POST", "/api/login", `{"name":"alice","password":"guess"}`, nil); res.StatusCode == 429 {
			break
		}
		if res.StatusCode != 401 {
			t.Fatalf("a failed login: %d", res.StatusCode)
		}
	}
	if res.StatusCode != 429 || res.Header.Get("Retry-After") == "" {
		t.Fatalf("after many failures: %d, Retry-After %q", res.StatusCode, res.Header.Get("Retry-After"))
	}
	// Even the right password waits now.
	if res, _ := p.rawCall("POST", "/api/login", `{"name":"alice","password":"alice-password"}`, nil); res.StatusCode != 429 {
		t.Fatalf("the right password within the limit: %d", res.StatusCode)
	}
}

// The dashboard's cookie: HttpOnly, SameSite=Strict, no token in the
// body; a request that changes something needs the CSRF header.
func TestPeopleCookieLogin(t *testing.T) {
	p := newPeople(t, nil)
	res, body := p.rawCall("POST", "/api/login", `{"name":"alice","password":"alice-password","cookie":true}`, nil)
	var c *http.Cookie
	for _, k := range res.Cookies() {
		if k.Name == "xzh_session" {
			c = k
		}
	}
	if res.StatusCode != 200 || c == nil || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/" || strings.Contains(body, c.Value) || strings.Contains(body, "token") {
		t.Fatalf("cookie login: %d %s %+v", res.StatusCode, body, c)
	}
	cookie := "xzh_session=" + c.Value
	if res, body := p.rawCall("GET", "/api/me", "", map[string]string{"Cookie": cookie}); res.StatusCode != 200 || !strings.Contains(body, `"user":"alice"`) {
		t.Fatalf("me by cookie: %d %s", res.StatusCode, body)
	}
	for _, h := range []map[string]string{
		{"Cookie": cookie},
		{"Cookie": cookie, "X-XZH-CSRF": "1", "Sec-Fetch-Site": "cross-site"},
	} {
		res, body := p.rawCall("POST", "/api/homes", `{"name":"C"}`, h)
		if res.StatusCode != 403 || !strings.Contains(body, "forbidden") {
			t.Fatalf("cookie POST with %v: %d %s", h, res.StatusCode, body)
		}
	}
	if res, body := p.rawCall("POST", "/api/homes", `{"name":"C"}`, map[string]string{"Cookie": cookie, "X-XZH-CSRF": "1"}); res.StatusCode != 201 {
		t.Fatalf("cookie POST with the header: %d %s", res.StatusCode, body)
	}
	res, _ = p.rawCall("POST", "/api/logout", "", map[string]string{"Cookie": cookie, "X-XZH-CSRF": "1"})
	if res.StatusCode != 204 || len(res.Cookies()) != 1 || res.Cookies()[0].MaxAge >= 0 {
		t.Fatalf("logout: %d %v", res.StatusCode, res.Cookies())
	}
	if res, _ := p.rawCall("GET", "/api/me", "", map[string]string{"Cookie": cookie}); res.StatusCode != 401 {
		t.Fatalf("me after logout: %d", res.StatusCode)
	}
}

// A device is bound by the code it shows: it joins the home of the member
// who typed it, and nobody else sees it.
func TestPeopleBindDeviceByCode(t *testing.T) {
	p := newPeople(t, func(c *server.Config) { c.DeviceAuth = "activation" })
	hook, codes := codeHook()
	d := p.otaDevice(sim.Config{DeviceID: "ac:00:00:00:21:01", OnActivation: hook})
	done := provisionAsync(t, d)
	code := codeShown(t, codes)
	p.wantError(p.alice, "GET", "/api/activations", nil, 403, "forbidden")
	p.wantError(p.alice, "POST", "/api/activations/"+code+"/approve", nil, 403, "forbidden")
	p.wantError(p.bob, "POST", "/api/homes/"+p.homeA+"/devices", map[string]any{"code": code}, 403, "forbidden") // a guest
	p.wantError(p.alice, "POST", "/api/homes/"+p.homeA+"/devices", map[string]any{"device": d.ID()}, 403, "forbidden")
	p.wantError(p.alice, "POST", "/api/homes/"+p.homeB+"/devices", map[string]any{"code": code}, 404, "not_found")
	dev := p.mustOK(p.alice, "POST", "/api/homes/"+p.homeA+"/devices", map[string]any{"code": code}, 200)
	if dev["id"] != d.ID() || dev["home"] != p.homeA {
		t.Fatalf("bound: %v", dev)
	}
	result(t, done)
	if err := connect(t, d); err != nil {
		t.Fatalf("the bound device connects: %v", err)
	}
	p.mustOK(p.alice, "GET", "/api/devices/"+d.ID(), nil, 200)
	if ids := deviceIDs(p.mustOK(p.bob, "GET", "/api/devices", nil, 200)); len(ids) != 1 {
		t.Fatalf("bob, a guest in A, lists %v", ids)
	}
	p.mustOK(p.alice, "POST", "/api/homes/"+p.homeA+"/members", map[string]any{"user": "bob", "role": "owner"}, 200)
	p.mustOK(p.alice, "DELETE", "/api/homes/"+p.homeA+"/members/bob", nil, 204)
	p.wantError(p.bob, "GET", "/api/devices/"+d.ID(), nil, 404, "not_found")
	p.mustOK(p.alice, "DELETE", "/api/homes/"+p.homeA+"/devices/"+d.ID(), nil, 204)
	p.wantError(p.alice, "GET", "/api/devices/"+d.ID(), nil, 404, "not_found")
	p.mustOK(p.alice, "DELETE", "/api/homes/"+p.homeA, nil, 204)
}

// stream is an open GET /api/events: its events by type and device, in
// order; the channel closes when the stream ends.
type stream struct {
	events <-chan streamEvent
	cancel context.CancelFunc
}

type streamEvent struct {
	typ, device, by, user string
}

func (p *people) openEvents(token string) *stream {
	p.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", p.URL()+"/api/events", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil || res.StatusCode != 200 {
		cancel()
		p.t.Fatalf("GET /api/events: %v %v", res, err)
	}
	ch := make(chan streamEvent, 64)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(ch)
		defer res.Body.Close()
		sc := bufio.NewScanner(res.Body)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			var ev struct {
				Type, DeviceID, By string
				Data               struct{ User string }
			}
			_ = json.Unmarshal([]byte(data), &ev)
			ch <- streamEvent{ev.Type, ev.DeviceID, ev.By, ev.Data.User}
		}
	}()
	p.t.Cleanup(func() { cancel(); <-done })
	return &stream{events: ch, cancel: cancel}
}

// until returns the events of s up to the first that match wants (which
// is last), failing if the stream ends first.
func (s *stream) until(t *testing.T, want func(streamEvent) bool) []streamEvent {
	t.Helper()
	var seen []streamEvent
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev, ok := <-s.events:
			if !ok {
				t.Fatalf("the stream ended; it had %v", seen)
			}
			seen = append(seen, ev)
			if want(ev) {
				return seen
			}
		case <-timeout:
			t.Fatalf("no such event; the stream had %v", seen)
		}
	}
}

// ends waits for s to end.
func (s *stream) ends(t *testing.T) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case _, ok := <-s.events:
			if !ok {
				return
			}
		case <-timeout:
			t.Fatal("the stream is still open")
		}
	}
}

// The event stream carries only the caller's homes' devices (a guest's
// own calls only), and ends at once when they leave the home or their
// token is revoked. Events come in the order they happened, so an event
// of another home sent before the one awaited would have arrived first.
func TestPeopleEventStream(t *testing.T) {
	p := newPeople(t, nil)
	p.devices()
	made := p.mustOK(p.alice, "POST", "/api/tokens", map[string]any{"name": "watcher"}, 201)
	alice, bob := p.openEvents(made["token"].(string)), p.openEvents(p.bob)
	call := func(token, dev string) {
		t.Helper()
		p.mustOK(token, "POST", "/api/devices/"+dev+"/tools/self.get_device_status/call", nil, 200)
	}
	call(p.Token, devB)
	p.mustOK(p.Token, "PATCH", "/api/devices/"+devB, map[string]any{"name": "B's"}, 200)
	call(p.alice, devA) // bob, a guest in A, must not see it
	call(p.bob, devA)
	for _, ev := range alice.until(t, func(e streamEvent) bool { return e.typ == "call_finished" && e.by == "bob" }) {
		if ev.device != devA {
			t.Fatalf("alice saw an event of %s: %+v", ev.device, ev)
		}
	}
	var bobs []string
	for _, ev := range bob.until(t, func(e streamEvent) bool { return e.typ == "call_finished" && e.device == devA }) {
		if ev.typ == "call_finished" || ev.typ == "device_updated" {
			bobs = append(bobs, ev.typ+" by "+ev.by+" of "+ev.device)
		}
	}
	if want := "call_finished by admin of " + devB + ",device_updated by admin of " + devB + ",call_finished by bob of " + devA; strings.Join(bobs, ",") != want {
		t.Fatalf("bob saw %v, want %s", bobs, want)
	}

	// devA moves to home B: for alice it is gone (device_deleted, as for a
	// device that does not exist); bob, who sees both homes, sees it moved.
	p.mustOK(p.Token, "POST", "/api/homes/"+p.homeB+"/devices", map[string]any{"device": devA}, 200)
	gone := alice.until(t, func(e streamEvent) bool { return e.typ == "device_deleted" })
	if ev := gone[len(gone)-1]; ev.device != devA {
		t.Fatalf("alice was told %+v", ev)
	}
	for _, ev := range bob.until(t, func(e streamEvent) bool { return e.typ == "device_updated" && e.device == devA }) {
		if ev.typ == "device_deleted" {
			t.Fatalf("bob, who sees both homes, was told the device was deleted: %+v", ev)
		}
	}
	p.mustOK(p.Token, "POST", "/api/homes/"+p.homeA+"/devices", map[string]any{"device": devA}, 200)

	p.mustOK(p.alice, "DELETE", "/api/homes/"+p.homeA+"/members/bob", nil, 204)
	bob.ends(t)
	p.mustOK(p.alice, "DELETE", "/api/tokens/"+made["id"].(string), nil, 204)
	alice.ends(t)
}
