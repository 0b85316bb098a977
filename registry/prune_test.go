package registry_test

import (
	"context"
	"testing"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/registry"
	"github.com/xiaozhi-hub/hub/registry/registrytest"
)

func isStored(t *testing.T, h *registrytest.Hub, id string) bool {
	t.Helper()
	_, ok := stored(t, h, id)
	return ok
}

// Only a device with nothing worth keeping is forgotten: not one online,
// with tools, or with call records.
func TestForgetUnusedKeepsWhatIsWorthKeeping(t *testing.T) {
	h := registrytest.New(t, registry.Options{})
	ctx := context.Background()
	h.Connect(t, "aa:00:00:00:00:01").Disconnect()
	h.Connect(t, "aa:00:00:00:00:02", hub.Tool{Name: "self.light.on", InputSchema: []byte(`{"type":"object"}`)}).Disconnect()
	online := h.Connect(t, "aa:00:00:00:00:03")
	if got := h.Reg.Unused(); len(got) != 1 || got[0].ID != "aa:00:00:00:00:01" || h.Reg.UnusedCount() != 1 {
		t.Fatalf("unused: %v, counted %d", got, h.Reg.UnusedCount())
	}
	for _, id := range []string{"aa:00:00:00:00:02", "aa:00:00:00:00:03"} {
		if gone, err := h.Reg.ForgetUnused(ctx, id); gone || err != nil {
			t.Fatalf("%s forgotten: %v %v", id, gone, err)
		}
	}
	if gone, err := h.Reg.ForgetUnused(ctx, "aa:00:00:00:00:01"); !gone || err != nil {
		t.Fatalf("the unused device: %v %v", gone, err)
	}
	if _, err := h.Reg.Device("aa:00:00:00:00:01"); hub.ErrorCode(err) != hub.ENOTFOUND || isStored(t, h, "aa:00:00:00:00:01") {
		t.Fatalf("the forgotten device is still there: %v", err)
	}
	online.Disconnect()
	if got := h.Reg.Unused(); len(got) != 1 || got[0].ID != "aa:00:00:00:00:03" || h.Reg.UnusedCount() != 1 {
		t.Fatalf("unused once the last device left: %v, counted %d", got, h.Reg.UnusedCount())
	}
}

// A device that connects while its record is being forgotten stays, in
// memory and, once its writes run, in the store.
func TestForgetUnusedLetsAReturningDeviceStay(t *testing.T) {
	h := registrytest.New(t, registry.Options{})
	ctx := context.Background()
	const id = "aa:00:00:00:00:04"
	h.Connect(t, id).Disconnect()
	deleting, release := make(chan struct{}), make(chan struct{})
	h.Store.SetHook(func(_ context.Context, op, dev string) error {
		if op == "DeleteDevice" && dev == id {
			close(deleting)
			<-release
		}
		return nil
	})
	type result struct {
		gone bool
		err  error
	}
	done := make(chan result, 1)
	go func() {
		gone, err := h.Reg.ForgetUnused(ctx, id)
		done <- result{gone, err}
	}()
	<-deleting
	l := h.Reg.Connect(registry.ConnectInfo{DeviceID: id, ClientID: "c", ProtocolVersion: 1}, registrytest.NewConn(id))
	l.SaveLater() // as the session does at hello; it waits for the delete
	close(release)
	if r := <-done; r.gone || r.err != nil {
		t.Fatalf("a device that came back was forgotten: %v %v", r.gone, r.err)
	}
	h.Store.SetHook(nil)
	if err := l.Save(ctx); err != nil { // after the queued save
		t.Fatal(err)
	}
	if d, err := h.Reg.Device(id); err != nil || !d.Online || !isStored(t, h, id) {
		t.Fatalf("the device that came back: %+v %v, stored %v", d, err, isStored(t, h, id))
	}
	l.Disconnect(ctx, "test")
}
