package cluster_test

import (
	"context"
	"testing"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/registry"
	"github.com/xiaozhi-hub/hub/registry/registrytest"
)

// A device moves from a to b before b has its record: a's claim reached b
// first (a holder claims a device before its record's write is done), and
// b kept it for when the record came. The device's connection to b is the
// newer one (b's claim comes after a's in the presence bucket), so the
// record's arrival on b must not hand the device back to a: b keeps its
// connection and a links to it through b. (b used to close its own
// connection and link to a's older one, which a then closed too: the
// device had no holder; TestClusterDeviceHasOneHolder's "hub-1 kept the
// older connection".)
func TestOlderClaimDoesNotTakeANewerConnection(t *testing.T) {
	e := startNATS(t)
	a, b := join(t, e, "a"), join(t, e, "b")
	presence := bucket(t, e, "xzhub_presence")
	ctx := context.Background()
	const id, marker = "aa:00:00:00:0d:20", "aa:00:00:00:0d:21"

	// a's claim of the device, with no record of it anywhere yet.
	if _, err := presence.Put(ctx, key(id), []byte(`{"node":"a","transport":"websocket"}`)); err != nil {
		t.Fatal(err)
	}
	// A device that a claims after it: once b links that one through a,
	// b has handled the claim before it (the watch is in order).
	registrytest.Connect(t, a.reg, registry.ConnectInfo{DeviceID: marker, ClientID: "m", ProtocolVersion: 3})
	eventually(t, "the marker device on b, through a", func() bool { d, err := b.reg.Device(marker); return err == nil && d.Online && d.Node == "a" })

	// The device connects to b: b claims it after a did.
	dev := registrytest.Connect(t, b.reg, registry.ConnectInfo{DeviceID: id, ClientID: "c", ProtocolVersion: 3, Transport: "websocket"})
	eventually(t, "the device on a, through b", func() bool { d, err := a.reg.Device(id); return err == nil && d.Online && d.Node == "b" })

	// A change of the device's record on a reaches b; a change of the
	// marker after it tells when b has applied it (one apply loop, in
	// order).
	name, done := "renamed on a", "marker renamed on a"
	if _, err := a.reg.UpdateDevice(ctx, id, hub.DevicePatch{Name: &name}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.reg.UpdateDevice(ctx, marker, hub.DevicePatch{Name: &done}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "both renames on b", func() bool {
		d, _ := b.reg.Device(id)
		m, _ := b.reg.Device(marker)
		return d.Name == name && m.Name == done
	})
	select {
	case <-dev.Closed():
		t.Fatalf("b closed the device's newer connection for a's older claim: %q", dev.Closes())
	default:
	}
	if d, _ := b.reg.Device(id); !d.Online || d.Node != "" {
		t.Fatalf("on b the device is online %v through %q; want its own connection", d.Online, d.Node)
	}
	if d, _ := a.reg.Device(id); !d.Online || d.Node != "b" {
		t.Fatalf("on a the device is online %v through %q; want through b", d.Online, d.Node)
	}
}

// A node taken for dead loses its claims (another node removes them) and
// claims its devices again; a device that meanwhile connected to another
// node is that node's: the claim after the removal is newer than the
// connection that was claimed before it, which is closed.
func TestClaimAfterARemovalTakesTheDevice(t *testing.T) {
	e := startNATS(t)
	a, b := join(t, e, "a"), join(t, e, "b")
	presence := bucket(t, e, "xzhub_presence")
	ctx := context.Background()
	const id = "aa:00:00:00:0d:22"
	dev := registrytest.Connect(t, a.reg, registry.ConnectInfo{DeviceID: id, ClientID: "c", ProtocolVersion: 3, Transport: "websocket"})
	eventually(t, "the device on b, through a", func() bool { d, err := b.reg.Device(id); return err == nil && d.Online && d.Node == "a" })

	// a's claim removed, as the node that took a for dead does, and b's
	// claim right after it, as when the device reconnects there.
	if err := presence.Delete(ctx, key(id)); err != nil {
		t.Fatal(err)
	}
	if _, err := presence.Put(ctx, key(id), []byte(`{"node":"b","transport":"websocket"}`)); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if t.Failed() {
			en, err := presence.Get(ctx, key(id))
			da, _ := a.reg.Device(id)
			db, _ := b.reg.Device(id)
			if err == nil {
				t.Logf("bucket %d %s; a: %v %q; b: %v %q; closes %q", en.Revision(), en.Value(), da.Online, da.Node, db.Online, db.Node, dev.Closes())
			}
		}
	}()
	eventually(t, "a to link the device through b", func() bool { d, _ := a.reg.Device(id); return d.Online && d.Node == "b" })
	select {
	case <-dev.Closed():
	default:
		t.Fatal("a links the device through b but kept its own older connection open")
	}
}
