package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/xiaozhi-hub/hub/server"
	"github.com/xiaozhi-hub/hub/sim"
)

// A keep-alive connection that sends nothing after its request is closed by
// the hub, instead of being held (with its buffers) for ever.
func TestIdleKeepAliveConnectionIsClosed(t *testing.T) {
	h := startHub(t, "", func(c *server.Config) { c.HTTPIdleTimeout = time.Second })
	conn, err := net.Dial("tcp", h.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "GET /healthz HTTP/1.1\r\nHost: hub\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	// Now idle: the hub must hang up (EOF) well before this generous deadline.
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	_, err = br.ReadByte()
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatal("the hub kept an idle keep-alive connection open for 30 s (http-idle-timeout 1s)")
	}
	if !errors.Is(err, io.EOF) {
		t.Fatalf("reading an idle connection: %v, want EOF", err)
	}
}

// openStream starts GET /api/events and returns its status, the error body
// of a refusal, and a function that ends the stream.
func (h *testHub) openStream() (int, map[string]any, func()) {
	h.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", h.URL()+"/api/events", nil)
	req.Header.Set("Authorization", "Bearer "+h.Token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		h.t.Fatalf("GET /api/events: %v", err)
	}
	if res.StatusCode != http.StatusOK {
		defer cancel()
		defer res.Body.Close()
		_, body := decodeBody(res.Body)
		return res.StatusCode, body, func() {}
	}
	return res.StatusCode, nil, func() { cancel(); res.Body.Close() }
}

func decodeBody(r io.Reader) (string, map[string]any) {
	data, _ := io.ReadAll(io.LimitReader(r, 1<<16))
	var out map[string]any
	_ = json.Unmarshal(data, &out)
	return string(data), out
}

// Event streams are capped, and a client that stops reading is dropped
// (freeing its place) instead of holding a goroutine and buffers for ever.
func TestEventStreamsAreCappedAndStalledReadersDropped(t *testing.T) {
	h := startHub(t, "", func(c *server.Config) {
		c.SSEMaxStreams = 1
		c.SSEWriteTimeout = 500 * time.Millisecond
	})
	const id = "aa:00:00:00:0e:01"
	h.device(sim.Config{DeviceID: id})

	// A client that reads the response headers, then nothing more.
	conn, err := net.Dial("tcp", h.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /api/events HTTP/1.1\r\nHost: hub\r\nAuthorization: Bearer %s\r\n\r\n", h.Token)
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("stalled stream: %v %v", res, err)
	}

	st, body, _ := h.openStream()
	if st != http.StatusTooManyRequests || errCode(body) != "too_many_requests" || !strings.Contains(errMessage(body), "sse-max-streams") {
		t.Fatalf("second stream with sse-max-streams 1: %d %v, want 429 too_many_requests naming the setting", st, body)
	}

	// Events pile up in the stalled connection until its write deadline
	// passes; then its place is free again.
	aliases := make([]string, 32) // the most, of the longest (≈6 KB an event)
	for i := range aliases {
		aliases[i] = fmt.Sprintf("%02d%s", i, strings.Repeat("灯", 60))
	}
	deadline := time.Now().Add(60 * time.Second)
	for n := 0; ; n++ {
		if time.Now().After(deadline) {
			t.Fatalf("after %d updates, a client that stopped reading still holds the only event stream", n)
		}
		aliases[0] = fmt.Sprintf("%d", n)
		if st, body := h.call("PATCH", "/api/devices/"+id, map[string]any{"aliases": aliases}); st != 200 {
			t.Fatalf("PATCH: %d %v", st, body)
		}
		if n%50 != 49 {
			continue
		}
		st, _, end := h.openStream()
		end()
		if st == http.StatusOK {
			t.Logf("stalled stream dropped after %d updates", n+1)
			return
		}
	}
}

// mcpInitialize opens an MCP session and returns the status, the session id
// and the body of a refusal.
func (h *testHub) mcpInitialize() (int, string, map[string]any) {
	h.t.Helper()
	req, _ := http.NewRequest("POST", h.URL()+"/mcp", strings.NewReader(
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"limits-test","version":"1"}}}`))
	req.Header.Set("Authorization", "Bearer "+h.Token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatalf("POST /mcp: %v", err)
	}
	defer res.Body.Close()
	raw, body := decodeBody(res.Body)
	if res.StatusCode != 200 && body == nil {
		body = map[string]any{"raw": raw}
	}
	return res.StatusCode, res.Header.Get("Mcp-Session-Id"), body
}

// /mcp sessions are capped: a client that opens session after session is
// refused with a JSON error naming the setting, and closing one makes room.
func TestMCPSessionsAreCapped(t *testing.T) {
	h := startHub(t, "", func(c *server.Config) { c.MCPMaxSessions = 3 })
	var ids []string
	for range 3 {
		st, sid, body := h.mcpInitialize()
		if st != 200 || sid == "" {
			t.Fatalf("initialize: %d %q %v", st, sid, body)
		}
		ids = append(ids, sid)
	}
	st, _, body := h.mcpInitialize()
	if st != http.StatusTooManyRequests || errCode(body) != "too_many_requests" || !strings.Contains(errMessage(body), "mcp-max-sessions") {
		t.Fatalf("fourth session with mcp-max-sessions 3: %d %v, want 429 too_many_requests naming the setting", st, body)
	}
	req, _ := http.NewRequest("DELETE", h.URL()+"/mcp", nil)
	req.Header.Set("Authorization", "Bearer "+h.Token)
	req.Header.Set("Mcp-Session-Id", ids[0])
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	waitFor(t, "room for a new MCP session after closing one", func() bool {
		st, _, _ := h.mcpInitialize()
		return st == 200
	})
}
