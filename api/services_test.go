package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xiaozhi-hub/hub/accounts"
	"github.com/xiaozhi-hub/hub/api"
	"github.com/xiaozhi-hub/hub/registry"
	"github.com/xiaozhi-hub/hub/services"
	"github.com/xiaozhi-hub/hub/store"
)

// servicesServer serves the API with real accounts; it returns its URL
// and the token of alice, a user.
func servicesServer(t *testing.T, withServices bool) (string, string) {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "hub.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	reg := registry.New(st, registry.Options{})
	if err := reg.Load(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reg.Close)
	people := accounts.New(st, accounts.Options{})
	if err := people.Load(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := people.AddUser(ctx, "alice", "alice's password"); err != nil {
		t.Fatal(err)
	}
	alice, _, err := people.Login(ctx, "alice", "alice's password", "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	opts := api.Options{Registry: reg, Token: token, Accounts: people}
	if withServices {
		m := services.New(services.Options{Store: st, Record: reg.RecordCall})
		if err := m.Load(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(m.Close)
		opts.Services = m
	}
	mux := http.NewServeMux()
	api.New(opts).Register(mux)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL, alice
}

func send(t *testing.T, base, tok, method, path, body string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// Only the admin creates and deletes services; people list and call the
// hub's own; the URL is given once, on creation.
func TestServicesRoutes(t *testing.T) {
	base, alice := servicesServer(t, true)
	st, v := send(t, base, token, "POST", "/api/services", `{"name":"calc"}`)
	url, _ := v["url"].(string)
	if st != 201 || !strings.HasPrefix(url, "ws://127.0.0.1:") || !strings.Contains(url, "/services/ws?token=xzs_") {
		t.Fatalf("create: %d %v", st, v)
	}
	if st, v := send(t, base, alice, "POST", "/api/services", `{"name":"mine"}`); st != 403 {
		t.Fatalf("a user creating: %d %v", st, v)
	}
	st, v = send(t, base, alice, "GET", "/api/services", "")
	list, _ := v["services"].([]any)
	if st != 200 || len(list) != 1 || strings.Contains(string(must(json.Marshal(list))), "token") {
		t.Fatalf("a user's list: %d %v", st, v)
	}
	if st, v := send(t, base, alice, "POST", "/api/services/calc/tools/x/call", `{}`); st != 404 {
		t.Fatalf("unknown tool: %d %v", st, v)
	}
	if st, _ := send(t, base, alice, "DELETE", "/api/services/calc", ""); st != 403 {
		t.Fatalf("a user deleting: %d", st)
	}
	if st, v := send(t, base, token, "POST", "/api/services", `{"name":"calc","extra":1}`); st != 400 {
		t.Fatalf("unknown field: %d %v", st, v)
	}
	if st, _ := send(t, base, token, "DELETE", "/api/services/calc", ""); st != 204 {
		t.Fatalf("delete: %d", st)
	}
	if st, _ := send(t, base, token, "GET", "/api/services/calc", ""); st != 404 {
		t.Fatalf("after delete: %d", st)
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// A hub without services says so.
func TestServicesUnavailable(t *testing.T) {
	base, _ := servicesServer(t, false)
	if st, v := send(t, base, token, "GET", "/api/services", ""); st != 503 {
		t.Fatalf("%d %v", st, v)
	}
}
