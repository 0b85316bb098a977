package registry_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/registry"
	"github.com/xiaozhi-hub/hub/registry/registrytest"
)

// gatedStore is a registry.Store in memory whose device and tool writes
// wait for the gate to open, counting the writes waiting at once. Only
// what these tests reach is implemented.
type gatedStore struct {
	registry.Store // nil: the methods below are the only ones used

	gate    chan struct{} // closed: writes pass
	mu      sync.Mutex
	waiting int // writes waiting at the gate now
	devices map[string]hub.Device
	tools   map[string][]hub.Tool
	fail    error // the result of SaveTools, when set
}

func newGatedStore() *gatedStore {
	return &gatedStore{gate: make(chan struct{}), devices: map[string]hub.Device{}, tools: map[string][]hub.Tool{}}
}

// gatedRegistry returns a loaded registry over a gated store.
func gatedRegistry(t *testing.T) (*gatedStore, *registry.Registry) {
	t.Helper()
	st := newGatedStore()
	reg := registry.New(st, registry.Options{})
	if err := reg.Load(t.Context()); err != nil {
		t.Fatal(err)
	}
	return st, reg
}

func (s *gatedStore) pass() {
	s.mu.Lock()
	s.waiting++
	s.mu.Unlock()
	<-s.gate
	s.mu.Lock()
	s.waiting--
	s.mu.Unlock()
}

func (s *gatedStore) LoadAll(context.Context) ([]hub.Snapshot, error) { return nil, nil }
func (s *gatedStore) LastCallID(context.Context) (int64, error)       { return 0, nil }
func (s *gatedStore) Log(_ []hub.CallRecord, _ []hub.Event, done func(error)) error {
	if done != nil {
		done(nil)
	}
	return nil
}

func (s *gatedStore) SaveDevice(_ context.Context, d hub.Device) error {
	s.pass()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.devices[d.ID] = d
	return nil
}

func (s *gatedStore) SaveTools(_ context.Context, id, _ string, tools []hub.Tool) error {
	s.pass()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return s.fail
	}
	s.tools[id] = tools
	return nil
}

func (s *gatedStore) state() (waiting int, devices map[string]hub.Device, tools map[string][]hub.Tool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.waiting, s.devices, s.tools
}

// A connect storm's background writes (each device's record at hello, its
// board from initialize, its tool list) wait for the store on a bounded
// number of goroutines, not one per device, and each device's newest
// state is what is stored once the store answers.
func TestStormWritesWaitOnBoundedWriters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st, reg := gatedRegistry(t)
		const devices = 4 * registry.MaxWriters
		for i := range devices {
			id := fmt.Sprintf("aa:00:00:00:%02x:%02x", i/256, i%256)
			l := reg.Connect(registry.ConnectInfo{DeviceID: id, MCP: true}, registrytest.NewConn("x"))
			l.SaveLater()
			l.SetServerInfo("board-old", "1.0")
			l.SetToolsLater(tools("a"))
			l.SetServerInfo("board", "2.4.2") // the newer report wins
			l.SetToolsLater(tools("a", "b"))
		}
		synctest.Wait()
		if waiting, _, _ := st.state(); waiting != registry.MaxWriters {
			t.Errorf("%d writes wait for the store at once, want %d (one per writer, not one per device)", waiting, registry.MaxWriters)
		}
		close(st.gate)
		reg.Close()
		_, devs, ts := st.state()
		if len(devs) != devices || len(ts) != devices {
			t.Fatalf("stored %d devices and %d tool lists, want %d of each", len(devs), len(ts), devices)
		}
		for id, d := range devs {
			if d.Board != "board" || d.Firmware != "2.4.2" {
				t.Errorf("device %s stored with board %q firmware %q, want the last report", id, d.Board, d.Firmware)
			}
			if len(ts[id]) != 2 {
				t.Errorf("device %s stored with %d tools, want the last list's 2", id, len(ts[id]))
			}
		}
	})
}

// SetToolsLater serves the list at once, without waiting for the store;
// tools_changed follows the write, and a failed write publishes none.
func TestSetToolsLaterAnnouncesOnceStored(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st, reg := gatedRegistry(t)
		events, stop := reg.Subscribe(hub.EventToolsChanged)
		defer stop()
		l := reg.Connect(registry.ConnectInfo{DeviceID: "d1", MCP: true}, registrytest.NewConn("x"))
		change := l.SetToolsLater(tools("a", "b")) // the store's gate is shut: this must not wait for it
		if len(change.Added) != 2 {
			t.Errorf("change %+v, want the 2 tools added", change)
		}
		if got, stale, _ := reg.Tools("d1"); len(got) != 2 || stale {
			t.Errorf("tools served before the write: %d stale %v, want the 2, fresh", len(got), stale)
		}
		synctest.Wait()
		select {
		case ev := <-events:
			t.Fatalf("%s published before the list was stored", ev.Type)
		default:
		}
		close(st.gate)
		synctest.Wait()
		select {
		case <-events:
		default:
			t.Fatal("no tools_changed once the list was stored")
		}
		if _, _, ts := st.state(); len(ts["d1"]) != 2 {
			t.Errorf("stored %d tools, want 2", len(ts["d1"]))
		}

		st.mu.Lock()
		st.fail = errors.New("database or disk is full")
		st.mu.Unlock()
		l.SetToolsLater(tools("c"))
		synctest.Wait()
		select {
		case ev := <-events:
			t.Errorf("%s published for a list the store refused", ev.Type)
		default:
		}
		reg.Close()
	})
}

// What discovery stores in the background (SetToolsLater) is in the store
// after Close and after a restart, for more devices than there are
// writers, behind each device's record.
func TestBackgroundToolListsAreDurableAtClose(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hub.db")
	reg, closeAll := openRegistry(t, path)
	const devices = 3 * registry.MaxWriters
	for i := range devices {
		id := fmt.Sprintf("aa:00:00:00:%02x:%02x", i/256, i%256)
		l := reg.Connect(registry.ConnectInfo{DeviceID: id, ClientID: "c", MCP: true}, registrytest.NewConn("x"))
		l.SaveLater()
		l.SetToolsLater(tools("a"))
		l.SetToolsLater(tools("a", "b"))
	}
	closeAll()

	reg, closeAll = openRegistry(t, path)
	defer closeAll()
	devs := reg.Devices()
	if len(devs) != devices {
		t.Fatalf("devices after restart: %d, want %d", len(devs), devices)
	}
	for _, d := range devs {
		if got, _, _ := reg.Tools(d.ID); len(got) != 2 || d.ClientID != "c" {
			t.Errorf("device %s after restart: %d tools, client id %q; want the last list's 2 and c", d.ID, len(got), d.ClientID)
		}
	}
}
