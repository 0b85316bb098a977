package mqttbroker

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"testing"
	"time"

	"github.com/mochi-mqtt/server/v2/packets"
)

func stackBytes() int64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/stacks:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64())
}

// deepStack uses about n KiB of its goroutine's stack, as the hub's
// handling of a device's message may (the session, JSON, the registry).
//
//go:noinline
func deepStack(n int) byte {
	var pad [1000]byte
	pad[n%len(pad)] = byte(n)
	if n <= 1 {
		return pad[0]
	}
	return deepStack(n-1) + pad[n%len(pad)]
}

// An idle device costs the broker one goroutine, its connection's reader,
// whose stack the GC takes down to 4 KiB once the device is silent, however
// deep the handling of its messages went: blocked waiting for the device's
// next packet the reader uses about 1 KiB of it (mochi's packet values are
// off the frames live then, third_party/mochi-mqtt-server/PATCHES.md), and
// no writer goroutine waits beside it (DirectClientWrites). The hub's
// handling runs above mochi's packet path (Client.AfterPacket), so the
// reader grows to 16 KiB, not 32: one GC takes it to 8.
func TestIdleDeviceHoldsASmallStack(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's frames are larger: stack sizes are measured without it")
	}
	handled := make(chan string, 1)
	b, h := startBroker(t, func(c *Config) {
		c.OnMessage = func(id string, _ []byte) {
			deepStack(12) // the reader's stack grows to 16 KiB
			handled <- id
		}
		c.OnDisconnect = func(string, Reason) {} // at the test's end, unread
	})
	const devices = 300
	runtime.GC()
	defer debug.SetGCPercent(debug.SetGCPercent(-1)) // no stack shrinks before the first GC below
	before, goroutines := stackBytes(), runtime.NumGoroutine()
	for i := range devices {
		id := fmt.Sprintf("aa:00:00:00:%02x:%02x", i/256, i%256)
		rc := dialRaw(t, b.Addr(), 4)
		rc.login(rawLogin(b, id))
		expectEvent(t, h, "connect "+id)
		rc.send(packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Publish}, TopicName: UplinkTopic(id), Payload: []byte(`{"type":"mcp"}`)})
		next(t, handled, "the device's message")
		if err := b.Publish(id, []byte(mcpInit)); err != nil {
			t.Fatal(err)
		}
		if pk := rc.mustRead("the hub's message"); string(pk.Payload) != mcpInit {
			t.Fatalf("device got %q", pk.Payload)
		}
	}
	if g := runtime.NumGoroutine() - goroutines; g > devices {
		t.Fatalf("%d idle devices run %d goroutines of the broker, want 1 each", devices, g)
	}
	runtime.GC() // the first: each reader's stack is halved once
	first := float64(stackBytes()-before) / devices
	for range 3 { // each GC halves a stack at most once
		runtime.GC()
	}
	per := float64(stackBytes()-before) / devices
	t.Logf("%.0f bytes of stack per idle device after one GC", first)
	if first > 10<<10 {
		t.Fatalf("%.1f KiB of goroutine stack per idle device after one GC, want about 8: the hub's handling ran below mochi's packet path", first/1024)
	}
	t.Logf("%.0f bytes of stack per idle device", per)
	if per > 6<<10 {
		t.Fatalf("%.1f KiB of goroutine stack per idle device, want about 4", per/1024)
	}
}

// A device that stops reading holds up only the callers publishing to it,
// each for at most WriteTimeout: meanwhile another device's messages go
// both ways, and then the stuck one is disconnected.
func TestStuckDeviceHoldsUpNoOtherDevice(t *testing.T) {
	b, h := startBroker(t, func(c *Config) { c.WriteTimeout = time.Second })
	const stuckID, otherID = "aa:bb:cc:dd:ee:77", "aa:bb:cc:dd:ee:01"
	stuck := dialRaw(t, b.Addr(), 4)
	_ = stuck.conn.(interface{ SetReadBuffer(int) error }).SetReadBuffer(4096)
	stuck.login(rawLogin(b, stuckID))
	expectEvent(t, h, "connect "+stuckID)
	other := connect(t, deviceConfig(t, b, otherID))
	expectEvent(t, h, "connect "+otherID)

	payload := []byte(`{"type":"x","pad":"` + strings.Repeat("a", 60_000) + `"}`)
	failed := make(chan error, 1)
	go func() { // the stuck device reads nothing
		for {
			if err := b.Publish(stuckID, payload); err != nil {
				failed <- err
				return
			}
		}
	}()
	for i := range 20 {
		msg := fmt.Sprintf(`{"type":"mcp","n":%d}`, i)
		if err := b.Publish(otherID, []byte(msg)); err != nil {
			t.Fatal(err)
		}
		if m := next(t, other.Messages(), "the other device's message"); string(m.Payload) != msg {
			t.Fatalf("other device got %q, want %q", m.Payload, msg)
		}
		if err := other.Publish([]byte(msg)); err != nil {
			t.Fatal(err)
		}
		if got := next(t, h.messages, "the other device's reply"); got != (message{otherID, msg}) {
			t.Fatalf("hub got %+v", got)
		}
	}
	next(t, failed, "the stuck device's publish failing")
	expectEvent(t, h, "disconnect "+stuckID+": "+string(ReasonClosed))
}
