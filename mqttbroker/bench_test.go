package mqttbroker

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/mochi-mqtt/server/v2/packets"
)

// BenchmarkIdleConnections measures what the broker holds per idle,
// authenticated device connection (heap and goroutine stacks, after GC), at
// 1,000 connections. The clients are bare sockets that sent CONNECT, so
// almost all of the difference is the broker's. Run with -benchtime=1x.
func BenchmarkIdleConnections(b *testing.B) {
	const n = 1000
	for b.Loop() {
		br, _ := startBroker(b, func(c *Config) { c.OnConnect = nil; c.OnDisconnect = nil })
		before := memInUse()
		g0 := runtime.NumGoroutine()
		conns := make([]net.Conn, 0, n)
		for i := range n {
			cfg := deviceConfig(b, br, fmt.Sprintf("aa:bb:cc:dd:%02x:%02x", i>>8, i&0xff))
			c, err := net.Dial("tcp", br.Addr())
			if err != nil {
				b.Fatal(err)
			}
			conns = append(conns, c)
			if _, err := c.Write(rawConnect(cfg.ClientID, cfg.Username, cfg.Password)); err != nil {
				b.Fatal(err)
			}
			ack := make([]byte, 4)
			_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
			if _, err := io.ReadFull(c, ack); err != nil || ack[3] != 0 {
				b.Fatalf("CONNACK %v: %v", ack, err)
			}
		}
		after := memInUse()
		b.ReportMetric(float64(after-before)/n, "bytes/conn")
		b.ReportMetric(float64(runtime.NumGoroutine()-g0)/n, "goroutines/conn")
		for _, c := range conns {
			c.Close()
		}
	}
}

// BenchmarkRoundTrip is one device message in and one hub message out
// through the broker, one after the other (an MCP reply and the next
// request), over loopback: the cost of the broker's read and write paths
// per message pair, with the process's CPU time (broker and client) per
// round trip as cpu-µs/op.
func BenchmarkRoundTrip(b *testing.B) {
	handled := make(chan struct{}, 1)
	br, h := startBroker(b, func(c *Config) {
		c.OnMessage = func(string, []byte) { handled <- struct{}{} }
	})
	const id = "aa:00:00:00:00:01"
	rc := dialRaw(b, br.Addr(), 4)
	rc.login(rawLogin(br, id))
	<-h.events
	pk := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Publish}, TopicName: UplinkTopic(id),
		Payload: []byte(`{"type":"mcp","payload":{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"ok"}]}}}`)}
	var r0, r1 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &r0)
	for b.Loop() {
		rc.send(pk)
		<-handled
		if err := br.Publish(id, []byte(mcpInit)); err != nil {
			b.Fatal(err)
		}
		rc.mustRead("the hub's message")
	}
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &r1)
	cpu := r1.Utime.Nano() + r1.Stime.Nano() - r0.Utime.Nano() - r0.Stime.Nano()
	b.ReportMetric(float64(cpu)/float64(b.N)/1e3, "cpu-µs/op")
}

func memInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse + m.StackInuse
}

// rawConnect is an MQTT 3.1.1 CONNECT, clean session, keepalive 240.
func rawConnect(clientID, user, pass string) []byte {
	str := func(b []byte, s string) []byte { return append(binary.BigEndian.AppendUint16(b, uint16(len(s))), s...) }
	body := str(nil, "MQTT")
	body = append(body, 4, 0xC2, 0, 240)
	body = str(str(str(body, clientID), user), pass)
	return append([]byte{0x10, byte(len(body))}, body...) // < 128 bytes
}
