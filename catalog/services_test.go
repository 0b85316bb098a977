package catalog_test

import (
	"crypto/sha256"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/catalog"
	ct "github.com/xiaozhi-hub/hub/catalog/catalogtest"
	"github.com/xiaozhi-hub/hub/services"
	"github.com/xiaozhi-hub/hub/store"
)

// withServices returns a services manager over a real store holding n
// services of the hub (home "") with tools tools each, as they are cached
// while their programs are away.
func withServices(t *testing.T, n, tools int) *services.Manager {
	return withServicesIn(t, "", n, tools)
}

// withServicesIn is withServices for services of one home.
func withServicesIn(t *testing.T, home string, n, tools int) *services.Manager {
	t.Helper()
	db, err := store.Open(ctx0, filepath.Join(t.TempDir(), "hub.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	for i := range n {
		name := fmt.Sprintf("svc_%02d", i)
		hash := sha256.Sum256([]byte(name)) // each its own token
		if err := db.SaveService(ctx0, hub.Service{Name: name, Kind: hub.ServiceEndpoint, Home: home, Created: time.Now(), TokenHash: hash[:]}); err != nil {
			t.Fatal(err)
		}
		var ts []hub.Tool
		for j := range tools {
			ts = append(ts, ct.Tool(fmt.Sprintf("tool_%02d", j), fmt.Sprintf("does thing %d of %s", j, name), `{"x":{"type":"string"}}`))
		}
		if i == 13 {
			ts[0] = ct.Tool("forecast", "tomorrow's weather in a city", `{"city":{"type":"string"}}`)
		}
		if err := db.SaveServiceTools(ctx0, name, ts); err != nil {
			t.Fatal(err)
		}
	}
	m := services.New(services.Options{Store: db})
	t.Cleanup(m.Close)
	if err := m.Load(ctx0); err != nil {
		t.Fatal(err)
	}
	return m
}

// With one small service the catalog offers its tools under their own
// names beside the devices'; with 20 services of 20 tools each, the agent
// gets the four hub tools per turn, whatever the number of services'
// tools, and finds a service's tool through search_devices.
func TestServicesToolCountPerTurn(t *testing.T) {
	reg, _ := ct.NewHome(t, []ct.Spec{spec(1)})
	one := catalog.New(reg, catalog.Options{IncludeOffline: true, Services: withServices(t, 1, 3)})
	names := map[string]bool{}
	for _, tl := range one.Tools(ctx0) {
		names[tl.Name] = true
	}
	if !one.Direct(ctx0) || !names["ssvcU00_tool_00"] || !names["ssvcU00_tool_02"] {
		t.Fatalf("one service: direct %v, tools %v", one.Direct(ctx0), names)
	}
	if tl, ok := one.Lookup(ctx0, "ssvcU00_tool_01"); !ok || tl.Service != "svc_00" || tl.Target != "tool_01" || tl.DeviceID != "service:svc_00" {
		t.Fatalf("lookup: %+v %v", tl, ok)
	}

	many := catalog.New(reg, catalog.Options{IncludeOffline: true, Services: withServices(t, 20, 20)})
	tools := many.Tools(ctx0)
	t.Logf("20 services × 20 tools and 1 device: %d tools offered per turn", len(tools))
	if len(tools) != 4 || many.Direct(ctx0) {
		t.Fatalf("with 400 services' tools the agent is offered %d tools", len(tools))
	}
	res := many.Search(ctx0, "weather tomorrow", 3)
	if res.TotalServices != 20 || len(res.Results) == 0 || res.Results[0].ID != "service:svc_13" {
		t.Fatalf("search finds %d of %d services, first %+v", len(res.Results), res.TotalServices, res.Results[0].ID)
	}
}

// A home's service is offered to that home's devices' voices and people,
// and to nobody else: not in the tools, the search, a lookup or a call.
func TestServicesOfAHomeForItsDevicesOnly(t *testing.T) {
	reg, _ := ct.NewHome(t, []ct.Spec{spec(1)})
	cat := catalog.New(reg, catalog.Options{IncludeOffline: true, Services: withServicesIn(t, "B", 1, 2)})
	const name = "ssvcU00_tool_00"
	for _, c := range []struct {
		who  string
		p    *hub.Principal
		sees bool
	}{
		{"a device of home B", hub.DevicePrincipal("aa:00:00:00:00:0b", "B"), true},
		{"a person of home B", &hub.Principal{User: "bob", Homes: map[string]hub.Role{"B": hub.RoleGuest}}, true},
		{"a device of home A", hub.DevicePrincipal("aa:00:00:00:00:0a", "A"), false},
		{"a device in no home", hub.DevicePrincipal("aa:00:00:00:00:0c", ""), false},
		{"a person of home A", &hub.Principal{User: "alice", Homes: map[string]hub.Role{"A": hub.RoleOwner}}, false},
	} {
		ctx := hub.WithPrincipal(ctx0, c.p)
		offered := false
		for _, tl := range cat.Tools(ctx) {
			offered = offered || tl.Name == name
		}
		_, found := cat.Lookup(ctx, name)
		searched := false
		for _, r := range cat.Search(ctx, "tool_00", 5).Results {
			searched = searched || r.ID == "service:svc_00"
		}
		res := cat.CallDeviceTool(ctx, "service:svc_00", "tool_00", nil)
		called := res.Code != hub.ENOTFOUND
		if offered != c.sees || found != c.sees || searched != c.sees || called != c.sees {
			t.Fatalf("%s: offered %v, looked up %v, searched %v, called %v (%s); want %v", c.who, offered, found, searched, called, res.Text, c.sees)
		}
	}
}
