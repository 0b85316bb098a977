package ota

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/protocol"
)

// memStore is an in-memory Store.
type memStore struct {
	mu sync.Mutex
	m  map[string]Trust
}

func (s *memStore) LoadTrust(context.Context) ([]Trust, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Trust
	for _, t := range s.m {
		t.SystemInfo = nil
		out = append(out, t)
	}
	return out, nil
}

func (s *memStore) Trust(_ context.Context, id string) (Trust, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.m[id]
	if !ok {
		return Trust{}, hub.Errorf(hub.ENOTFOUND, "no trust for %s", id)
	}
	return t, nil
}

func (s *memStore) SaveTrust(_ context.Context, t Trust) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := s.m[t.DeviceID]
	cur.DeviceID, cur.ClientID, cur.Generation, cur.Approved, cur.Revoked = t.DeviceID, t.ClientID, t.Generation, t.Approved, t.Revoked
	cur.ActivationVersion, cur.SerialNumber, cur.ActivationHMAC = t.ActivationVersion, t.SerialNumber, t.ActivationHMAC
	cur.Transport = t.Transport
	s.m[t.DeviceID] = cur
	return nil
}

func (s *memStore) RecordCheck(_ context.Context, t Trust) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := s.m[t.DeviceID]
	cur.DeviceID, cur.Board, cur.Firmware, cur.LastCheck = t.DeviceID, t.Board, t.Firmware, t.LastCheck
	if cur.ClientID == "" {
		cur.ClientID = t.ClientID
	}
	if t.SystemInfo != nil {
		cur.SystemInfo = t.SystemInfo
	}
	s.m[t.DeviceID] = cur
	return nil
}

// clock is a settable time source.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }

func newService(t *testing.T, edit func(*Options)) (*Service, *clock, *memStore) {
	t.Helper()
	clk := &clock{now: time.Date(2026, 8, 8, 8, 0, 0, 0, time.UTC)}
	st := &memStore{m: map[string]Trust{}}
	opts := Options{Store: st, SecretPath: filepath.Join(t.TempDir(), "device-secret"), Now: clk.Now}
	if edit != nil {
		edit(&opts)
	}
	s, err := New(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return s, clk, st
}

// check makes an OTA request for id against s and decodes the answer.
// Each device has an address of its own, as on a LAN.
func check(t *testing.T, s *Service, id string) (int, map[string]any) {
	t.Helper()
	return checkAs(t, s, id, "", addrOf(id))
}

func addrOf(id string) string {
	h := fnv.New32a()
	h.Write([]byte(id))
	n := h.Sum32()
	return fmt.Sprintf("10.%d.%d.%d:40000", n>>16&0xff, n>>8&0xff, n&0xff)
}

// checkAs makes an OTA request for id with clientID from remote.
func checkAs(t *testing.T, s *Service, id, clientID, remote string) (int, map[string]any) {
	t.Helper()
	req := httptest.NewRequest("POST", "http://hub.local:8000/xiaozhi/ota/", strings.NewReader(`{"version":2}`))
	req.RemoteAddr = remote
	req.Header.Set("Device-Id", id)
	if clientID != "" {
		req.Header.Set("Client-Id", clientID)
	}
	req.Header.Set("User-Agent", "bread-compact-wifi/2.4.2")
	w := httptest.NewRecorder()
	s.serveCheck(w, req)
	var out map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil {
		t.Fatalf("answer %q: %v", w.Body, err)
	}
	return w.Code, out
}

func TestTokenIsBoundToDeviceClientAndGeneration(t *testing.T) {
	secret := []byte("0123456789abcdef0123456789abcdef")
	const id, client = "aa:bb:cc:00:00:01", "7b94d69a-1b2c-4d5e-8f90-0123456789ab"
	tok := signToken(secret, id, client, 0)
	if strings.ContainsAny(tok, " \t") || !strings.HasPrefix(tok, tokenPrefix) {
		t.Fatalf("token %q: the firmware prepends Bearer only to tokens without spaces", tok)
	}
	if !verifyToken(secret, id, client, 0, tok) {
		t.Fatal("own token refused")
	}
	for _, bad := range []struct {
		id, client string
		gen        int64
		tok        string
	}{
		{"aa:bb:cc:00:00:02", client, 0, tok}, // another device
		{id, "another-client", 0, tok},        // another identity with the same MAC
		{id, "", 0, tok},                      // no Client-Id
		{id, client, 7, tok},                  // revoked since
		{id, client, 0, tok[:len(tok)-2]},     // truncated
		{id, client, 0, strings.ToUpper(tok)}, // mangled
		{id, client, 0, "kitchen-secret"},
	} {
		if verifyToken(secret, bad.id, bad.client, bad.gen, bad.tok) {
			t.Errorf("accepted %+v", bad)
		}
	}
	if verifyToken([]byte("another hub's secret, 32 bytes..."), id, client, 0, tok) {
		t.Error("a token of another hub was accepted")
	}
}

func TestSecretFileIsPrivateAndKept(t *testing.T) {
	path := filepath.Join(t.TempDir(), "device-secret")
	a, err := loadSecret(path, discard())
	if err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(path)
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("secret file mode: %v %v", info, err)
	}
	os.Chmod(path, 0o644)
	b, err := loadSecret(path, discard())
	if err != nil || string(a) != string(b) || len(a) != 32 {
		t.Fatalf("reloaded secret differs: %v", err)
	}
	if info, _ := os.Stat(path); info.Mode().Perm() != 0o600 {
		t.Fatalf("mode not fixed: %v", info.Mode())
	}
	os.WriteFile(path, []byte("short"), 0o600)
	if _, err := loadSecret(path, discard()); err == nil || !strings.Contains(err.Error(), "delete it") {
		t.Fatalf("damaged secret: %v", err)
	}
}

func TestVersions(t *testing.T) {
	for _, ok := range []string{"2.4.2", "10", "1.0.0.1", "0.0.1", "2.10.0"} {
		if _, good := parseVersion(ok); !good {
			t.Errorf("%q refused", ok)
		}
	}
	for _, bad := range []string{"", "v2.4.2", "2.4.2-rc1", "2..4", "2.4.", ".1", "1234567890", "2.4.2 ", "1.2.3.4.5.6.7.8.9", "２.4"} {
		if _, good := parseVersion(bad); good {
			t.Errorf("%q accepted: the firmware cannot compare it", bad)
		}
	}
	v := func(s string) []int { x, _ := parseVersion(s); return x.nums }
	for _, c := range []struct {
		a, b string
		sign int
	}{{"2.10", "2.9", 1}, {"2.4.2", "2.4", 1}, {"2.4.2", "2.4.2", 0}, {"1.9.9", "2.0", -1}, {"3", "2.99.99", 1}} {
		if got := compareVersions(v(c.a), v(c.b)); got*c.sign < 0 || (c.sign == 0) != (got == 0) {
			t.Errorf("compare(%s, %s) = %d, want sign %d", c.a, c.b, got, c.sign)
		}
	}
	if n, ok := parseRunning("2.4.2-6-g48142026"); !ok || len(n) != 3 || n[2] != 2 {
		t.Errorf("running 2.4.2-6-g48142026 = %v %v", n, ok)
	}
	if _, ok := parseRunning("v2.4.2"); ok {
		t.Error("running v2.4.2 must not be compared")
	}
}

func TestCodesAreUniqueStableAndExpire(t *testing.T) {
	s, clk, _ := newService(t, nil)
	codes := map[string]string{}
	for i := range 300 {
		id := "aa:00:00:00:" + string(rune('a'+i/26)) + string(rune('a'+i%26)) + ":00"
		st, ans := check(t, s, id)
		act, _ := ans["activation"].(map[string]any)
		code, _ := act["code"].(string)
		if st != 200 || len(code) != 6 || strings.Trim(code, "0123456789") != "" {
			t.Fatalf("%s: %d %v", id, st, ans)
		}
		if other, dup := codes[code]; dup {
			t.Fatalf("code %s given to %s and %s", code, other, id)
		}
		codes[code] = id
	}
	_, first := check(t, s, "aa:00:00:00:aa:00")
	code := first["activation"].(map[string]any)["code"].(string)
	clk.Add(5 * time.Minute)
	_, again := check(t, s, "aa:00:00:00:aa:00")
	act := again["activation"].(map[string]any)
	if act["code"] != code || act["timeout_ms"].(float64) != float64(5*time.Minute/time.Millisecond) {
		t.Fatalf("a pending device must keep its code: %v then %v", first, again)
	}
	clk.Add(5 * time.Minute) // expired now
	if _, _, err := s.Approve(context.Background(), code, hub.DevicePatch{}); hub.ErrorCode(err) != hub.ENOTFOUND {
		t.Fatalf("approving an expired code: %v", err)
	}
	if len(s.Pending()) != 0 {
		t.Fatalf("expired codes are still listed: %v", s.Pending())
	}
	_, fresh := check(t, s, "aa:00:00:00:aa:00")
	if c := fresh["activation"].(map[string]any)["code"]; c == code {
		// Possible by chance (1 in a million); a new challenge is certain.
		if fresh["activation"].(map[string]any)["challenge"] == act["challenge"] {
			t.Fatal("an expired activation was reused")
		}
	}
}

func TestTooManyPendingIsRefusedCleanly(t *testing.T) {
	s, _, _ := newService(t, func(o *Options) { o.MaxPending = 2 })
	check(t, s, "aa:00:00:00:00:01")
	check(t, s, "aa:00:00:00:00:02")
	if st, ans := check(t, s, "aa:00:00:00:00:03"); st != 503 || ans["error"] == nil {
		t.Fatalf("third pending device: %d %v", st, ans)
	}
}

func TestApprovalAndRevocation(t *testing.T) {
	s, _, st := newService(t, nil)
	id := protocol.Identity{DeviceID: "aa:00:00:00:00:01"}
	_, ans := check(t, s, id.DeviceID)
	code := ans["activation"].(map[string]any)["code"].(string)
	if err := s.Authorize(nil, id); hub.ErrorCode(err) != hub.EUNAUTHORIZED || !strings.Contains(err.Error(), "not approved") {
		t.Fatalf("unapproved device: %v", err)
	}
	if _, _, err := s.Approve(context.Background(), code, hub.DevicePatch{}); err != nil {
		t.Fatal(err)
	}
	_, ans = check(t, s, id.DeviceID)
	if ans["activation"] != nil {
		t.Fatalf("activation after approval: %v", ans)
	}
	id.Token = ans["websocket"].(map[string]any)["token"].(string)
	if err := s.Authorize(nil, id); err != nil {
		t.Fatalf("approved device with its token: %v", err)
	}
	if string(st.m[id.DeviceID].SystemInfo) != `{"version":2}` {
		t.Fatalf("system info not recorded: %+v", st.m[id.DeviceID])
	}
	if _, err := s.Revoke(context.Background(), id.DeviceID); err != nil {
		t.Fatal(err)
	}
	if err := s.Authorize(nil, id); err == nil || !strings.Contains(err.Error(), "revoked") {
		t.Fatalf("revoked device: %v", err)
	}
	if _, err := s.Revoke(context.Background(), "aa:00:00:00:00:99"); hub.ErrorCode(err) != hub.ENOTFOUND {
		t.Fatalf("revoking an unknown device: %v", err)
	}
}

func TestBaseURL(t *testing.T) {
	s, _, _ := newService(t, nil)
	local := &net.TCPAddr{IP: net.IPv4(192, 168, 1, 10), Port: 8000}
	for _, c := range []struct{ host, want string }{
		{"192.168.1.10", "ws://192.168.1.10:8000/xiaozhi/v1/"}, // firmware: Host without the port
		{"hub.local:9000", "ws://hub.local:9000/xiaozhi/v1/"},
		{"", "ws://192.168.1.10:8000/xiaozhi/v1/"},
	} {
		req := httptest.NewRequest("POST", "/xiaozhi/ota/", nil)
		req.Host = c.host
		req = req.WithContext(context.WithValue(req.Context(), http.LocalAddrContextKey, net.Addr(local)))
		if got := wsURL(s.baseURL(req)); got != c.want {
			t.Errorf("Host %q: %s, want %s", c.host, got, c.want)
		}
	}
	p, _, _ := newService(t, func(o *Options) { o.PublicURL = "https://hub.example.com/base/" })
	if got := wsURL(p.baseURL(httptest.NewRequest("POST", "/", nil))); got != "wss://hub.example.com/base/xiaozhi/v1/" {
		t.Errorf("public URL: %s", got)
	}
	for _, bad := range []string{"hub.local:8000", "ftp://x", "http://", "http://x/?a=b"} {
		if _, err := ParsePublicURL(bad); err == nil {
			t.Errorf("public-url %q accepted", bad)
		}
	}
}

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

func TestServerTimeIsMillisecondsAndMinutes(t *testing.T) {
	s, clk, _ := newService(t, func(o *Options) { o.Location = time.FixedZone("CST", 8*3600+30*60) })
	_, ans := check(t, s, "aa:00:00:00:00:01")
	st := ans["server_time"].(map[string]any)
	if st["timestamp"] != float64(clk.Now().UnixMilli()) || st["timezone_offset"] != 510.0 {
		t.Fatalf("server_time: %v", st)
	}
}

// The device-facing routes answer errors by the hub's one table: a
// cluster's shared state that does not answer is 503 with its message (the
// device retries), not 500 "internal error"; a timeout is 504; the body
// keeps its exact length for the firmware's HTTP client.
func TestRefusalsUseTheHubsErrorTable(t *testing.T) {
	s, _, _ := newService(t, nil)
	for _, tc := range []struct {
		err    error
		status int
		msg    string
	}{
		{hub.Errorf(hub.EUNAVAILABLE, "the cluster's shared state did not answer"), 503, "did not answer"},
		{hub.Errorf(hub.ETIMEOUT, "the store did not answer in time"), 504, "in time"},
		{hub.Errorf(hub.ETOOMANY, "slow down"), 429, "slow down"},
		{fmt.Errorf("disk I/O error at /secret"), 500, "internal error"},
	} {
		w := httptest.NewRecorder()
		s.refuse(w, httptest.NewRequest("POST", "/xiaozhi/ota/", nil), tc.err)
		if w.Code != tc.status || !strings.Contains(w.Body.String(), tc.msg) || w.Header().Get("Content-Length") != fmt.Sprint(w.Body.Len()) {
			t.Errorf("%v: %d %s (Content-Length %s), want %d with %q", tc.err, w.Code, w.Body, w.Header().Get("Content-Length"), tc.status, tc.msg)
		}
	}
}
