package session_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/registry"
	"github.com/xiaozhi-hub/hub/registry/registrytest"
	"github.com/xiaozhi-hub/hub/session"
)

// A slow store does not hold up discovery: while the device's first tool
// list is still being written, the device's tools/list_changed is listed
// again at once; each list is announced once it is stored, and the store
// ends with the newest.
func TestDiscoveryDoesNotWaitForTheStore(t *testing.T) {
	h := registrytest.New(t, registry.Options{})
	const id = "aa:00:00:00:0b:01"
	arrived, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	h.Store.SetHook(func(_ context.Context, op, dev string) error {
		if op != "SaveTools" || dev != id {
			return nil
		}
		first := false
		once.Do(func() { first = true })
		if first {
			close(arrived)
			<-release
		}
		return nil
	})
	changed, stop := h.Reg.Subscribe(hub.EventToolsChanged)
	defer stop()
	d := serveDevice(t, session.Options{Registry: h.Reg}, id, mcpHello)
	var released sync.Once
	open := func() { released.Do(func() { close(release) }) }
	t.Cleanup(open) // before the session's Close, which writes what is queued
	d.expect("initialize", initResult)
	d.expect("tools/list", `{"tools":[`+tool("self.a")+`]}`)
	select {
	case <-arrived:
	case <-time.After(10 * time.Second):
		t.Fatal("the tool list never reached the store")
	}
	if tools, stale, _ := h.Reg.Tools(id); len(tools) != 1 || stale {
		t.Fatalf("tools %v (stale %v) while the store writes them: want the list served", tools, stale)
	}
	d.send(`{"session_id":"","type":"mcp","payload":{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}}`)
	d.expect("tools/list", `{"tools":[`+tool("self.a")+`,`+tool("self.new")+`]}`) // the store still holds the first list
	open()
	waitEvent(t, changed, id)
	waitEvent(t, changed, id) // the second list's, after the first
	if tools, _, _ := h.Reg.Tools(id); len(tools) != 2 {
		t.Errorf("tools %d after list_changed, want the new list's 2", len(tools))
	}
	snaps, err := h.DB.LoadAll(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range snaps {
		if s.Device.ID == id && len(s.Tools) != 2 {
			t.Errorf("stored tools %d, want the newest list's 2", len(s.Tools))
		}
	}
}
