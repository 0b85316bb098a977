package mqttbroker

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"runtime"
	"testing"
	"time"
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
