package registry_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/registry"
	"github.com/xiaozhi-hub/hub/registry/registrytest"
)

// While the registry is busy with one device (its lock held, as when its
// discovery stores a tool list), every other device connects, is looked
// up, discovered, called and goes offline: in a connect storm no hello
// waits for another device's discovery.
func TestOneBusyDeviceKeepsNoOtherWaiting(t *testing.T) {
	ctx := context.Background()
	h := registrytest.New(t, registry.Options{})
	busy := h.Connect(t, "busy", mcpTool("self.a"))
	release := registry.HoldDevice(h.Reg, "busy")
	done := make(chan error)
	go func() {
		done <- func() error {
			c := registrytest.NewConn("other")
			c.Answer("self.ping", registrytest.Answer{Result: registrytest.Text("pong")})
			l := h.Reg.Connect(registry.ConnectInfo{DeviceID: "other", MCP: true, Transport: "websocket"}, c)
			l.SetServerInfo("board", "2.0.0")
			l.SetToolsLater([]hub.Tool{mcpTool("self.ping")})
			if d, err := h.Reg.Device("other"); err != nil || !d.Online || d.ToolCount != 1 {
				return fmt.Errorf("device other: %+v, %v; want online with one tool", d, err)
			}
			if n, k := h.Reg.OnlineCount(), h.Reg.KnownCount(); n != 2 || k != 2 {
				return fmt.Errorf("%d online of %d known, want 2 of 2", n, k)
			}
			if _, err := h.Reg.CallTool(ctx, registry.CallRequest{DeviceID: "other", Tool: "self.ping"}); err != nil {
				return err
			}
			l.Disconnect(ctx, "bye")
			return nil
		}()
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second): // a deadlock, not a slow machine
		release()
		t.Fatal("another device waited for the busy one")
	}
	release()
	if d, err := h.Reg.Device("busy"); err != nil || !d.Online || d.ToolCount != 1 {
		t.Fatalf("busy device after: %+v, %v", d, err)
	}
	busy.Disconnect()
}

// A device deleted while it reconnects, over and over, ends either known
// and online or unknown, and the online and known counts agree with the
// devices listed.
func TestDeleteRacingConnectKeepsCountsTrue(t *testing.T) {
	ctx := context.Background()
	h := registrytest.New(t, registry.Options{})
	const devices, rounds = 8, 50
	var wg sync.WaitGroup
	for i := range devices {
		id := fmt.Sprintf("d%d", i)
		wg.Go(func() {
			for range rounds {
				h.Reg.Connect(registry.ConnectInfo{DeviceID: id, Transport: "websocket"}, registrytest.NewConn(id))
			}
		})
		wg.Go(func() {
			for range rounds {
				if err := h.Reg.DeleteDevice(ctx, id); err != nil && hub.ErrorCode(err) != hub.ENOTFOUND {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	online := 0
	list := h.Reg.Devices()
	for _, d := range list {
		if d.Online {
			online++
		} else {
			t.Errorf("device %s known but offline: its last connect or delete would have made it online or unknown", d.ID)
		}
	}
	if h.Reg.OnlineCount() != online || h.Reg.KnownCount() != len(list) {
		t.Fatalf("counts: %d online, %d known; listed %d devices, %d online", h.Reg.OnlineCount(), h.Reg.KnownCount(), len(list), online)
	}
}
