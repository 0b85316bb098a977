package ota

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/protocol"
)

func tokenOf(ans map[string]any) string {
	ws, _ := ans["websocket"].(map[string]any)
	tok, _ := ws["token"].(string)
	return tok
}

// A trust record written before Client-Id binding (approved, no client id)
// is bound at the device's next check; then another Client-Id gets no
// token, at the OTA endpoint or at the WebSocket.
func TestRecordWithoutClientIDIsBoundAtNextCheck(t *testing.T) {
	const id = "aa:00:00:00:00:31"
	st := &memStore{m: map[string]Trust{id: {DeviceID: id, Approved: time.Now()}}}
	s, _, _ := newService(t, func(o *Options) { o.Store = st })
	_, ans := checkAs(t, s, id, "uuid-real", "10.0.0.31:1")
	tok := tokenOf(ans)
	if tok == "" || ans["activation"] != nil {
		t.Fatalf("the approved device gets no token: %v", ans)
	}
	if st.m[id].ClientID != "uuid-real" {
		t.Fatalf("not bound at the check: %+v", st.m[id])
	}
	_, ans = checkAs(t, s, id, "uuid-stranger", "10.0.0.99:1")
	if tokenOf(ans) != "" || ans["activation"] == nil {
		t.Fatalf("a stranger with the MAC got a token: %v", ans)
	}
	if err := s.Authorize(nil, protocol.Identity{DeviceID: id, ClientID: "uuid-stranger", Token: tok}); hub.ErrorCode(err) != hub.EUNAUTHORIZED {
		t.Fatalf("the device's token with another Client-Id: %v", err)
	}
	if err := s.Authorize(nil, protocol.Identity{DeviceID: id, ClientID: "uuid-real", Token: tok}); err != nil {
		t.Fatalf("the device itself: %v", err)
	}
}

// Under the token policy, a check from a device that never connected
// stores nothing; a device that connected is bound, and another identity
// with its MAC gets no token.
func TestTokenPolicyStoresNothingUntilConnectAndBinds(t *testing.T) {
	s, _, st := newService(t, func(o *Options) { o.Policy = PolicyToken })
	for i := range 50 {
		id := fmt.Sprintf("aa:00:00:00:01:%02x", i)
		if code, ans := checkAs(t, s, id, "c", addrOf(id)); code != 200 || tokenOf(ans) == "" {
			t.Fatalf("%s: %d %v", id, code, ans)
		}
	}
	if len(st.m) != 0 {
		t.Fatalf("OTA checks of devices that never connected stored %d records", len(st.m))
	}
	const id = "aa:00:00:00:02:01"
	_, ans := checkAs(t, s, id, "uuid-real", "10.0.2.1:1")
	if err := s.Authorize(nil, protocol.Identity{DeviceID: id, ClientID: "uuid-real", Token: tokenOf(ans)}); err != nil {
		t.Fatal(err)
	}
	if st.m[id].ClientID != "uuid-real" {
		t.Fatalf("not bound at its first connection: %+v", st.m[id])
	}
	_, ans = checkAs(t, s, id, "uuid-stranger", "10.0.2.99:1")
	if tok := tokenOf(ans); tok != "" {
		t.Fatalf("a stranger with the MAC of a bound device got a token: %v", ans)
	}
	if _, err := s.Rebind(context.Background(), id, "uuid-stranger", ""); err != nil {
		t.Fatal(err)
	}
	if _, ans = checkAs(t, s, id, "uuid-stranger", "10.0.2.99:1"); tokenOf(ans) == "" {
		t.Fatalf("after a rebind the new identity gets no token: %v", ans)
	}
}

// A flood of codes cannot lock out a device that is there: codes nobody
// polls make room, codes of polling devices are kept.
func TestPendingFloodEvictsUnseenCodesOnly(t *testing.T) {
	s, clk, _ := newService(t, func(o *Options) { o.MaxPending = 3 })
	_, ans := checkAs(t, s, "aa:00:00:00:03:01", "real", "10.0.3.1:1")
	realCode := ans["activation"].(map[string]any)["code"].(string)
	for i := range 20 { // from one address
		checkAs(t, s, fmt.Sprintf("bb:00:00:00:00:%02x", i), "x", "10.9.9.9:1")
	}
	if n := len(s.Pending()); n != 3 {
		t.Fatalf("%d codes pending", n)
	}
	clk.Add(20 * time.Second)
	checkAs(t, s, "aa:00:00:00:03:01", "real", "10.0.3.1:1") // the real device polls
	clk.Add(20 * time.Second)
	for i := range 2 { // new devices take the places of the unpolled codes
		id := fmt.Sprintf("aa:00:00:00:04:%02x", i)
		if code, ans := checkAs(t, s, id, "c", addrOf(id)); code != 200 || ans["activation"] == nil {
			t.Fatalf("new device %s: %d %v", id, code, ans)
		}
	}
	// Every code's device was seen recently: a new one waits.
	if code, _ := checkAs(t, s, "aa:00:00:00:05:01", "c", "10.0.5.1:1"); code != 503 {
		t.Fatalf("a fourth device while three are polling: %d, want 503", code)
	}
	found := false
	for _, a := range s.Pending() {
		found = found || a.Code == realCode
	}
	if !found {
		t.Fatalf("the polling device's code was evicted: %v", s.Pending())
	}
}

func TestOTARequestsAreRateLimitedPerAddress(t *testing.T) {
	s, _, _ := newService(t, nil)
	limited := 0
	for i := range 100 {
		if code, _ := checkAs(t, s, fmt.Sprintf("bb:00:00:00:01:%02x", i), "x", "10.9.9.8:1"); code == 429 {
			limited++
		}
	}
	if limited < 60 {
		t.Fatalf("%d of 100 checks from one address in an instant were refused, want at least 60", limited)
	}
	if code, ans := checkAs(t, s, "aa:00:00:00:06:01", "c", "10.0.6.1:1"); code != 200 || !strings.Contains(fmt.Sprint(ans), "activation") {
		t.Fatalf("another address is not affected: %d %v", code, ans)
	}
}

// A refused OTA request says when the address's next one will be
// accepted, and refusals do not put that time off.
func TestOTARateLimitRetryAfter(t *testing.T) {
	s, clk, _ := newService(t, func(o *Options) { o.RatePerAddr, o.BurstPerAddr = 0.1, 2 })
	retry := func() (int, string) {
		w := httptest.NewRecorder()
		s.serveCheck(w, httptestCheck("bb:00:00:00:07:01", "10.9.9.7:1"))
		return w.Code, w.Header().Get("Retry-After")
	}
	for i := range 2 {
		if code, _ := retry(); code == 429 {
			t.Fatalf("request %d of the burst of 2 was refused", i)
		}
	}
	for range 2 { // 10 s to a token: the whole seconds, plus one
		if code, after := retry(); code != 429 || after != "11" {
			t.Fatalf("over the burst: %d, Retry-After %q; want 429, 11", code, after)
		}
	}
	clk.Add(4 * time.Second)
	if code, after := retry(); code != 429 || after != "6" { // 5.99… s to a token
		t.Fatalf("4 s later: %d, Retry-After %q; want 429, 6", code, after)
	}
	clk.Add(6 * time.Second)
	if code, _ := retry(); code == 429 {
		t.Fatal("refused 10 s after the burst, when a token is back")
	}
}

// One address holds at most MaxPendingPerAddr codes; once they go unpolled,
// its new ones replace them.
func TestPendingCodesPerAddressAreBounded(t *testing.T) {
	s, clk, _ := newService(t, func(o *Options) { o.MaxPendingPerAddr = 4 })
	for i := range 10 {
		checkAs(t, s, fmt.Sprintf("bb:00:00:00:02:%02x", i), "x", "10.9.9.7:1")
	}
	if n := len(s.Pending()); n != 4 {
		t.Fatalf("one address holds %d codes, want 4", n)
	}
	clk.Add(keepSeen)
	if code, ans := checkAs(t, s, "bb:00:00:00:02:99", "x", "10.9.9.7:1"); code != 200 || ans["activation"] == nil {
		t.Fatalf("a new code once the old ones went unpolled: %d %v", code, ans)
	}
	if n := len(s.Pending()); n != 4 {
		t.Fatalf("one address holds %d codes, want 4", n)
	}
}

// New devices from one address are a quota that refills: NewDevicesPerAddr
// an hour. The refusal says when to retry.
func TestNewDevicesPerAddressRefills(t *testing.T) {
	s, clk, _ := newService(t, func(o *Options) { o.Policy, o.NewDevicesPerAddr = PolicyToken, 2 })
	for i := range 2 {
		if code, ans := checkAs(t, s, fmt.Sprintf("bb:00:00:00:03:%02x", i), "x", "10.9.9.6:1"); code != 200 || tokenOf(ans) == "" {
			t.Fatalf("new device %d: %d %v", i, code, ans)
		}
	}
	req := httptestCheck("bb:00:00:00:03:99", "10.9.9.6:1")
	w := httptest.NewRecorder()
	s.serveCheck(w, req)
	if w.Code != 429 || w.Header().Get("Retry-After") != "1801" {
		t.Fatalf("a 3rd new device: %d, Retry-After %q; want 429 after 1801 s (2 an hour)", w.Code, w.Header().Get("Retry-After"))
	}
	clk.Add(30 * time.Minute)
	if code, ans := checkAs(t, s, "bb:00:00:00:03:99", "x", "10.9.9.6:1"); code != 200 || tokenOf(ans) == "" {
		t.Fatalf("half an hour later: %d %v", code, ans)
	}
}

func httptestCheck(id, remote string) *http.Request {
	req := httptest.NewRequest("POST", "http://hub.local:8000/xiaozhi/ota/", strings.NewReader(`{}`))
	req.RemoteAddr = remote
	req.Header.Set("Device-Id", id)
	req.Header.Set("Client-Id", "x")
	return req
}
