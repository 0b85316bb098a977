package registry_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/registry"
	"github.com/xiaozhi-hub/hub/registry/registrytest"
	"github.com/xiaozhi-hub/hub/store"
)

func openRegistry(t *testing.T, path string) (*registry.Registry, func()) {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	reg := registry.New(st, registry.Options{})
	if err := reg.Load(ctx); err != nil {
		t.Fatal(err)
	}
	return reg, func() { reg.Close(); st.Close() }
}

func tools(names ...string) []hub.Tool {
	var ts []hub.Tool
	for _, n := range names {
		ts = append(ts, hub.Tool{Name: n, InputSchema: []byte(`{"type":"object"}`)})
	}
	return ts
}

// A partial tool list (a page failed) never replaces a cached list, and is
// what a device with no cache gets.
func TestPartialToolListKeepsTheCache(t *testing.T) {
	ctx := context.Background()
	reg, closeAll := openRegistry(t, filepath.Join(t.TempDir(), "hub.db"))
	defer closeAll()

	l := reg.Connect(registry.ConnectInfo{DeviceID: "d1", MCP: true}, registrytest.NewConn("x"))
	if _, err := l.SetTools(ctx, tools("a", "b")); err != nil {
		t.Fatal(err)
	}
	l = reg.Connect(registry.ConnectInfo{DeviceID: "d1", MCP: true}, registrytest.NewConn("x"))
	if _, applied, err := l.SetPartialTools(ctx, tools("a")); err != nil || applied {
		t.Fatalf("partial list over a cache: applied %v, err %v; want kept cache", applied, err)
	}
	if got, _, _ := reg.Tools("d1"); len(got) != 2 {
		t.Errorf("cached tools: %d, want the 2 of the complete list", len(got))
	}

	l2 := reg.Connect(registry.ConnectInfo{DeviceID: "d2", MCP: true}, registrytest.NewConn("x"))
	if _, applied, err := l2.SetPartialTools(ctx, tools("a")); err != nil || !applied {
		t.Fatalf("partial list without a cache: applied %v, err %v; want applied", applied, err)
	}
	if got, _, _ := reg.Tools("d2"); len(got) != 1 {
		t.Errorf("tools of a device without cache: %d, want the 1 read", len(got))
	}
}

// What the hub writes in the background (the device record at hello, the
// board from initialize) is in the store after Close, in the order it was
// reported, and after a restart.
func TestBackgroundWritesAreDurableAtClose(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hub.db")
	reg, closeAll := openRegistry(t, path)
	for i := range 50 {
		id := fmt.Sprintf("aa:00:00:00:00:%02d", i)
		l := reg.Connect(registry.ConnectInfo{DeviceID: id, ClientID: "c", MCP: true}, registrytest.NewConn("x"))
		l.SaveLater()
		l.SetServerInfo("board-old", "1.0")
		l.SetServerInfo("board", "2.4.2") // the newer report wins
	}
	closeAll()

	reg, closeAll = openRegistry(t, path)
	defer closeAll()
	devs := reg.Devices()
	if len(devs) != 50 {
		t.Fatalf("devices after restart: %d, want 50", len(devs))
	}
	for _, d := range devs {
		if d.Board != "board" || d.Firmware != "2.4.2" {
			t.Errorf("device %s: board %q firmware %q, want the last report", d.ID, d.Board, d.Firmware)
		}
	}
}
