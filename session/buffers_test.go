package session_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/session"
)

// clientFrame is a masked WebSocket frame from a client (RFC 6455 §5.2).
func clientFrame(opcode byte, payload []byte) []byte {
	f := []byte{0x80 | opcode}
	switch n := len(payload); {
	case n < 126:
		f = append(f, 0x80|byte(n))
	case n < 1<<16:
		f = append(f, 0x80|126)
		f = binary.BigEndian.AppendUint16(f, uint16(n))
	default:
		f = append(f, 0x80|127)
		f = binary.BigEndian.AppendUint64(f, uint64(n))
	}
	mask := [4]byte{1, 2, 3, 4}
	f = append(f, mask[:]...)
	for i, b := range payload {
		f = append(f, b^mask[i%4])
	}
	return f
}

// A device that sends its hello in the same write as its upgrade request
// (net/http has then read it already), and then a listen and a message
// larger than the connection's read buffer in one write, is answered and
// heard: nothing it sent is lost or reordered between the buffers.
func TestFramesRightAfterTheUpgradeAreRead(t *testing.T) {
	reg, url := startHub(t, session.Options{})
	events, stop := reg.Subscribe(hub.EventDeviceMessage)
	defer stop()
	addr := strings.TrimSuffix(strings.TrimPrefix(url, "ws://"), "/xiaozhi/v1/")
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	req := "GET /xiaozhi/v1/ HTTP/1.1\r\nHost: " + addr + "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n" +
		"Device-Id: aa:00:00:00:0f:01\r\nClient-Id: raw\r\nProtocol-Version: 1\r\n\r\n"
	hello := `{"type":"hello","version":1,"transport":"websocket","audio_params":{"format":"opus","sample_rate":16000,"channels":1,"frame_duration":60}}`
	if _, err := c.Write(append([]byte(req), clientFrame(0x1, []byte(hello))...)); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade: %v %v", resp, err)
	}
	h := make([]byte, 2)
	if _, err := br.Read(h); err != nil || h[0] != 0x81 {
		t.Fatalf("the hub did not answer the hello that came with the upgrade request: %x %v", h, err)
	}

	big := `{"type":"note","text":"` + strings.Repeat("话", 1500) + `"}` // 4.5 KB: its event says its size
	var batch bytes.Buffer
	batch.Write(clientFrame(0x1, []byte(`{"session_id":"","type":"listen","state":"start","mode":"auto"}`)))
	batch.Write(clientFrame(0x1, []byte(big)))
	batch.Write(clientFrame(0x1, []byte(`{"type":"note","text":"last"}`)))
	if _, err := c.Write(batch.Bytes()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var got []string
	for len(got) < 3 {
		select {
		case ev := <-events:
			m, _ := json.Marshal(ev.Data)
			got = append(got, string(m))
		case <-ctx.Done():
			t.Fatalf("the hub heard %d of the 3 messages", len(got))
		}
	}
	if !strings.Contains(got[0], `"listen"`) || !strings.Contains(got[1], `"bytes":4551`) || !strings.Contains(got[1], "话话话") || !strings.Contains(got[2], `"last"`) {
		t.Fatalf("the hub heard %.80q", got)
	}
}
