package mcpserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/xiaozhi-hub/hub/api"
	"github.com/xiaozhi-hub/hub/catalog"
	ct "github.com/xiaozhi-hub/hub/catalog/catalogtest"
	"github.com/xiaozhi-hub/hub/mcpserver"
	"github.com/xiaozhi-hub/hub/registry"
)

const testToken = "test-token"

func startServer(t *testing.T, reg *registry.Registry, opts mcpserver.Options) string {
	t.Helper()
	opts.Debounce = 10 * time.Millisecond
	srv := mcpserver.New(reg, opts)
	hs := httptest.NewServer(api.RequireToken(testToken, srv)) // as the hub mounts /mcp
	t.Cleanup(func() {
		srv.Close()
		hs.Close()
	})
	return hs.URL + "/mcp"
}

// nodeClient runs testdata/client.mjs, the official TypeScript SDK client.
type nodeClient struct {
	t   *testing.T
	in  io.WriteCloser
	out *bufio.Scanner
}

func startNode(t *testing.T, url string) *nodeClient {
	t.Helper()
	// Locally the test skips without Node; in CI (.ci/run installs the SDK)
	// a missing piece is a failure, not a silent skip.
	skip := t.Skip
	if os.Getenv("CI") != "" {
		skip = t.Fatal
	}
	node, err := exec.LookPath("node")
	if err != nil {
		skip("node is not installed; the MCP TypeScript SDK test needs Node.js")
	}
	if _, err := os.Stat(filepath.Join("testdata", "node_modules", "@modelcontextprotocol", "sdk")); err != nil {
		skip("testdata/node_modules is missing: run `npm ci` in mcpserver/testdata to install @modelcontextprotocol/sdk")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	cmd := exec.CommandContext(ctx, node, "client.mjs")
	cmd.Dir = "testdata"
	cmd.Env = append(os.Environ(), "MCP_URL="+url, "MCP_TOKEN="+testToken)
	cmd.Stderr = os.Stderr
	in, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		in.Close()
		_ = cmd.Wait()
		cancel()
	})
	c := &nodeClient{t: t, in: in, out: bufio.NewScanner(stdout)}
	c.out.Buffer(nil, 4<<20)
	var hello struct {
		Connected bool   `json:"connected"`
		Error     string `json:"error"`
	}
	c.read(&hello)
	if !hello.Connected {
		t.Fatalf("node client did not connect: %s", hello.Error)
	}
	return c
}

func (c *nodeClient) read(v any) {
	c.t.Helper()
	if !c.out.Scan() {
		c.t.Fatalf("node client ended: %v", c.out.Err())
	}
	line := c.out.Bytes()
	var e struct{ Error string }
	if json.Unmarshal(line, &e) == nil && e.Error != "" {
		c.t.Fatalf("node client: %s", e.Error)
	}
	if err := json.Unmarshal(line, v); err != nil {
		c.t.Fatalf("node client said %s: %v", line, err)
	}
}

func (c *nodeClient) do(cmd map[string]any, v any) {
	c.t.Helper()
	b, _ := json.Marshal(cmd)
	if _, err := c.in.Write(append(b, '\n')); err != nil {
		c.t.Fatal(err)
	}
	c.read(v)
}

type listed struct {
	Tools []struct {
		Name        string         `json:"name"`
		Description string         `json:"description"`
		InputSchema map[string]any `json:"inputSchema"`
	} `json:"tools"`
}

func (l listed) names() []string {
	var out []string
	for _, t := range l.Tools {
		out = append(out, t.Name)
	}
	return out
}

type called struct {
	Result struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	} `json:"result"`
}

func TestTypeScriptSDKClient(t *testing.T) {
	home := ct.Home()
	reg, devs := ct.NewHome(t, []ct.Spec{home[0], home[1]}) // 吸顶灯 (MCP), 落地灯 (IoT)
	node := startNode(t, startServer(t, reg, mcpserver.Options{}))

	var l listed
	node.do(map[string]any{"op": "list"}, &l)
	turnOn := catalog.Name("aa:00:00:00:00:01", "self.lamp.turn_on")
	for _, want := range []string{turnOn, catalog.Name("aa:00:00:00:00:02", "Lamp.TurnOn"), "search_devices", "get_device"} {
		if !slices.Contains(l.names(), want) {
			t.Fatalf("tools/list lacks %s: %v", want, l.names())
		}
	}
	if slices.Contains(l.names(), catalog.Name("aa:00:00:00:00:01", "self.reboot")) {
		t.Fatal("user-only tool listed")
	}

	var c called
	node.do(map[string]any{"op": "call", "name": turnOn}, &c)
	if c.Result.IsError || len(c.Result.Content) != 1 || c.Result.Content[0].Text != "true" {
		t.Fatalf("turn_on: %+v", c)
	}
	if devs["aa:00:00:00:00:01"].State("lamp", "power") != true {
		t.Fatal("the lamp is not on after the call")
	}
	node.do(map[string]any{"op": "call", "name": catalog.Name("aa:00:00:00:00:01", "self.audio_speaker.set_volume"),
		"arguments": map[string]any{"volume": 150}}, &c)
	if !c.Result.IsError || !strings.Contains(c.Result.Content[0].Text, "maximum") {
		t.Fatalf("invalid arguments should be an isError result: %+v", c)
	}

	// A device comes: list_changed, and its tools are listed.
	bedside := ct.Connect(t, reg, home[6])
	var ch struct{ Changed bool }
	node.do(map[string]any{"op": "wait_list_changed", "timeout_ms": 5000}, &ch)
	if !ch.Changed {
		t.Fatal("no notifications/tools/list_changed after a device connected")
	}
	node.do(map[string]any{"op": "list"}, &l)
	rgb := catalog.Name("aa:00:00:00:00:07", "self.light.set_rgb")
	if !slices.Contains(l.names(), rgb) {
		t.Fatalf("new device's tool %s not listed: %v", rgb, l.names())
	}
	// It goes: list_changed, and its tools are gone.
	bedside.Disconnect()
	node.do(map[string]any{"op": "wait_list_changed", "timeout_ms": 5000}, &ch)
	if !ch.Changed {
		t.Fatal("no notifications/tools/list_changed after a device disconnected")
	}
	node.do(map[string]any{"op": "list"}, &l)
	if slices.Contains(l.names(), rgb) {
		t.Fatal("offline device's tools still listed")
	}
	var closed struct{ Closed bool }
	node.do(map[string]any{"op": "close"}, &closed)
}

func TestRejectsMissingToken(t *testing.T) {
	reg := ct.NewRegistry(t)
	url := startServer(t, reg, mcpserver.Options{})
	resp, err := http.Post(url, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("status %d without a token", resp.StatusCode)
	}
}
