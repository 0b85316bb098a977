package mcpclient_test

import (
	"context"
	"runtime"
	"testing"

	"github.com/xiaozhi-hub/hub/internal/jsonscan"
	"github.com/xiaozhi-hub/hub/mcpclient"
	"github.com/xiaozhi-hub/hub/protocol"
)

// A device's client that has had its calls answered and sits idle, as
// almost every connected device's does, holds little memory: a hub keeps
// one per connected device.
func TestIdleClientIsSmall(t *testing.T) {
	const clients = 2000
	var m runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m)
	before := m.HeapAlloc
	cs := make([]*mcpclient.Client, clients)
	for i := range cs {
		var c *mcpclient.Client
		c = mcpclient.New(func(_ context.Context, payload []byte) error {
			var vals [1][]byte
			if !jsonscan.ValidMembers(payload, []string{"id"}, vals[:]) || vals[0] == nil {
				return nil // a notification
			}
			reply, err := protocol.DecodeRPC([]byte(`{"jsonrpc":"2.0","id":` + string(vals[0]) + `,"result":{"content":[],"isError":false}}`))
			if err != nil {
				t.Error(err)
			}
			c.Deliver(reply) // as the read loop would, a moment later
			return nil
		}, mcpclient.Options{})
		for range 3 {
			if _, err := c.Call(context.Background(), "tools/call", map[string]any{"name": "self.get_device_status", "arguments": map[string]any{}}); err != nil {
				t.Fatal(err)
			}
		}
		cs[i] = c
	}
	runtime.GC()
	runtime.ReadMemStats(&m)
	per := float64(m.HeapAlloc-before) / clients
	runtime.KeepAlive(cs)
	t.Logf("%.0f bytes per idle client (the test's sender included)", per)
	if per > 550 { // 609 with a map of pending requests, 495 without
		t.Fatalf("an idle client holds %.0f bytes, want at most 550", per)
	}
}
