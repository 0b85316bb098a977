// Package registrytest is the shared test harness of the registry: a loaded
// registry over a SQLite store in a temporary directory, a store wrapper
// that lets a test fail or hold writes, and a fake device connection
// (Conn). Packages that consume the registry (api, catalog, mcpserver,
// agent) test against it instead of writing their own fakes.
package registrytest

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/registry"
	"github.com/xiaozhi-hub/hub/store"
)

// Hub is a registry over a real store, both closed at the end of the test.
type Hub struct {
	Reg   *registry.Registry
	Store *Store // wraps DB; Store.SetHook fails or holds writes
	DB    *store.Store
	Path  string // the database file
	opts  registry.Options
}

// New returns a loaded registry over a new SQLite file in tb's temporary
// directory.
func New(tb testing.TB, opts registry.Options) *Hub {
	tb.Helper()
	h := &Hub{Path: filepath.Join(tb.TempDir(), "hub.db"), opts: opts}
	h.open(tb)
	return h
}

// NewRegistry is New(tb, registry.Options{}).Reg.
func NewRegistry(tb testing.TB) *registry.Registry { return New(tb, registry.Options{}).Reg }

func (h *Hub) open(tb testing.TB) {
	tb.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, h.Path, store.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	h.DB = db
	h.Store = &Store{Store: db}
	h.Reg = registry.New(h.Store, h.opts)
	if err := h.Reg.Load(ctx); err != nil {
		tb.Fatal(err)
	}
	reg := h.Reg
	tb.Cleanup(func() {
		reg.Close()
		if err := db.Close(); err != nil {
			tb.Error(err)
		}
	})
}

// Restart closes the registry and its store and opens both again on the
// same file, as a restarted hub does (the old connections are closed).
func (h *Hub) Restart(tb testing.TB) {
	tb.Helper()
	h.Reg.Close()
	if err := h.DB.Close(); err != nil {
		tb.Fatal(err)
	}
	h.open(tb)
}

// Device is a connected fake device: its link and its connection.
type Device struct {
	*Conn
	Link *registry.Link
}

// Disconnect ends the connection from the device's side, as a session
// does when the socket closes: calls in flight fail, the device goes offline.
func (d *Device) Disconnect() {
	d.Hangup()
	d.Link.Disconnect(context.Background(), "test disconnect")
}

// Connect connects an MCP device (a device with tools) or a legacy one (no
// tools) as a session does after the hello: Connect, Save and, with
// tools, SetTools.
func (h *Hub) Connect(tb testing.TB, id string, tools ...hub.Tool) *Device {
	tb.Helper()
	return Connect(tb, h.Reg, registry.ConnectInfo{DeviceID: id, ClientID: "client-" + id, ProtocolVersion: 1, MCP: len(tools) > 0}, tools...)
}

// Connect is Hub.Connect for any registry, with the given hello.
func Connect(tb testing.TB, reg *registry.Registry, info registry.ConnectInfo, tools ...hub.Tool) *Device {
	tb.Helper()
	ctx := context.Background()
	c := NewConn(info.DeviceID)
	l := reg.Connect(info, c)
	if err := l.Save(ctx); err != nil {
		tb.Fatalf("connect %s: %v", info.DeviceID, err)
	}
	if len(tools) > 0 {
		if _, err := l.SetTools(ctx, tools); err != nil {
			tb.Fatalf("set tools of %s: %v", info.DeviceID, err)
		}
	}
	return &Device{Conn: c, Link: l}
}
