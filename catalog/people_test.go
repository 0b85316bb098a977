package catalog_test

import (
	"context"
	"strings"
	"testing"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/catalog"
	ct "github.com/xiaozhi-hub/hub/catalog/catalogtest"
)

// Each principal is offered only the devices of its homes; any other
// device is, in every view and call of the catalog, exactly an unknown one.
func TestCatalogShowsEachPrincipalItsHomes(t *testing.T) {
	a, b := spec(1), spec(7) // two lamps: one in home A, one in home B
	reg, devs := ct.NewHome(t, []ct.Spec{a, b, spec(3)})
	for id, home := range map[string]string{a.ID: "A", b.ID: "B"} {
		if _, err := reg.UpdateDevice(context.Background(), id, hub.DevicePatch{Home: &home}); err != nil {
			t.Fatal(err)
		}
	}
	cat := catalog.New(reg, catalog.Options{})
	alice := hub.WithPrincipal(ctx0, &hub.Principal{User: "alice", Homes: map[string]hub.Role{"A": hub.RoleOwner}})
	const unknown = "aa:00:00:00:00:99"
	same := func(foreign, other string) bool {
		return strings.ReplaceAll(foreign, b.ID, "X") == strings.ReplaceAll(other, unknown, "X")
	}

	for _, tool := range cat.Tools(alice) {
		if tool.DeviceID != "" && tool.DeviceID != a.ID {
			t.Fatalf("alice is offered %s of %s", tool.Name, tool.DeviceID)
		}
	}
	if devs := cat.Devices(alice); len(devs) != 1 || devs[0].ID != a.ID {
		t.Fatalf("alice's devices: %v", devs)
	}
	if _, ok := cat.Lookup(alice, catalog.Name(b.ID, "self.lamp.turn_on")); ok {
		t.Fatal("alice looks up home B's lamp")
	}
	if _, err := cat.DeviceTools(alice, b.ID); err == nil {
		t.Fatal("alice gets home B's lamp's tools")
	}
	_, errForeign := cat.Describe(alice, b.ID)
	_, errUnknown := cat.Describe(alice, unknown)
	if errForeign == nil || !same(errForeign.Error(), errUnknown.Error()) {
		t.Fatalf("describe home B's lamp: %v; an unknown device: %v", errForeign, errUnknown)
	}
	for _, q := range []string{"床头灯", b.ID, "", "灯"} {
		res := cat.Search(alice, q, 10)
		for _, r := range res.Results {
			if r.ID != a.ID {
				t.Fatalf("alice's search %q finds %s", q, r.ID)
			}
		}
		if res.TotalDevices != 1 {
			t.Fatalf("alice's search counts %d devices", res.TotalDevices)
		}
	}
	// A foreign device that matches better does not push hers out.
	if res := cat.Search(alice, "床头 灯", 1); len(res.Results) != 1 || res.Results[0].ID != a.ID {
		t.Fatalf("alice's search for a lamp, limit 1: %+v", res)
	}
	foreign := cat.CallDeviceTool(alice, b.ID, "self.lamp.turn_on", nil)
	other := cat.CallDeviceTool(alice, unknown, "self.lamp.turn_on", nil)
	if !foreign.IsError || !same(foreign.Text, other.Text) || len(devs[b.ID].Calls()) != 0 {
		t.Fatalf("alice calling home B's lamp: %+v; an unknown device: %+v", foreign, other)
	}
	if r := cat.Call(alice, catalog.Name(b.ID, "self.lamp.turn_on"), nil); !r.IsError || len(devs[b.ID].Calls()) != 0 {
		t.Fatalf("alice calling home B's lamp by name: %+v", r)
	}
	if r := cat.Call(alice, catalog.Name(a.ID, "self.lamp.turn_on"), nil); r.IsError || len(devs[a.ID].Calls()) != 1 {
		t.Fatalf("alice calling her lamp: %+v", r)
	}

	// The admin (and the hub itself) sees all; a device in no home speaks
	// for the devices in no home only.
	if n := len(cat.Devices(hub.WithPrincipal(ctx0, hub.Admin))); n != 3 {
		t.Fatalf("the admin sees %d devices", n)
	}
	loose := hub.WithPrincipal(ctx0, hub.DevicePrincipal(spec(3).ID, ""))
	if devs := cat.Devices(loose); len(devs) != 1 || devs[0].ID != spec(3).ID {
		t.Fatalf("a device in no home sees %v", devs)
	}
	// Moving a device to alice's home shows it to her at once.
	home := "A"
	if _, err := reg.UpdateDevice(context.Background(), b.ID, hub.DevicePatch{Home: &home}); err != nil {
		t.Fatal(err)
	}
	if len(cat.Devices(alice)) != 2 {
		t.Fatal("a device moved into alice's home stays hidden from her")
	}
}
