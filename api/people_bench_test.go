package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/accounts"
	"github.com/xiaozhi-hub/hub/api"
	"github.com/xiaozhi-hub/hub/registry"
	"github.com/xiaozhi-hub/hub/registry/registrytest"
	"github.com/xiaozhi-hub/hub/store"
)

// BenchmarkPeopleHotPaths measures what the people checks cost on the hot
// paths, a tool call and the device list, with 1,000 devices in 100
// homes: as the admin (no filter) and as a user in one home (10 devices).
// The handler is served in process (no sockets), so that the checks are
// not lost in network noise.
//
//	go test ./api -run '^$' -bench PeopleHotPaths -benchmem
func BenchmarkPeopleHotPaths(b *testing.B) {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(b.TempDir(), "hub.db"), store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = st.Close() })
	reg := registry.New(st, registry.Options{})
	b.Cleanup(reg.Close)
	if err := reg.Load(ctx); err != nil {
		b.Fatal(err)
	}
	acc := accounts.New(st, accounts.Options{})
	if err := acc.Load(ctx); err != nil {
		b.Fatal(err)
	}
	if _, err := acc.AddUser(ctx, "alice", "alice-password"); err != nil {
		b.Fatal(err)
	}
	alice, _ := acc.Principal("alice")
	var homes []string
	for i := range 100 {
		h, err := acc.CreateHome(ctx, alice, fmt.Sprintf("home %d", i))
		if err != nil {
			if hub.ErrorCode(err) != hub.EINVALID { // alice owns at most 20
				b.Fatal(err)
			}
			h = hub.HomeView{ID: fmt.Sprintf("other-home-%d", i)}
		}
		homes = append(homes, h.ID)
	}
	// alice is in one home only: she leaves the others she made.
	for _, id := range homes[1:20] {
		if err := acc.RemoveMember(ctx, alice, id, "alice"); err != nil {
			b.Fatal(err)
		}
	}
	tool := []hub.Tool{{Name: "t", InputSchema: json.RawMessage(`{"type":"object"}`)}}
	for i := range 1000 {
		id := fmt.Sprintf("d%04d", i)
		c := registrytest.NewConn(id)
		c.Answer("t", registrytest.Answer{Result: registrytest.Text("ok")})
		l := reg.Connect(registry.ConnectInfo{DeviceID: id, MCP: true}, c)
		if _, err := l.SetTools(ctx, tool); err != nil {
			b.Fatal(err)
		}
		if _, err := reg.UpdateDevice(ctx, id, hub.DevicePatch{Home: &homes[i%100]}); err != nil {
			b.Fatal(err)
		}
	}
	userToken, _, err := acc.Login(ctx, "alice", "alice-password", "127.0.0.1")
	if err != nil {
		b.Fatal(err)
	}
	mux := http.NewServeMux()
	api.New(api.Options{Registry: reg, Token: token, Accounts: acc}).Register(mux)

	for _, who := range []struct{ name, token string }{{"admin", token}, {"user", userToken}} {
		for _, path := range []struct{ name, method, path, body string }{
			{"call", "POST", "/api/devices/d0000/tools/t/call", `{"arguments":{}}`},
			{"list", "GET", "/api/devices", ""},
		} {
			b.Run(path.name+"/"+who.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					req := httptest.NewRequest(path.method, path.path, strings.NewReader(path.body))
					req.Header.Set("Authorization", "Bearer "+who.token)
					w := httptest.NewRecorder()
					mux.ServeHTTP(w, req)
					if w.Code != 200 {
						b.Fatalf("%d %s", w.Code, w.Body)
					}
				}
			})
		}
	}
}
