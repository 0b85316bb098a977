package mcpserver_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/xiaozhi-hub/hub/catalog"
	ct "github.com/xiaozhi-hub/hub/catalog/catalogtest"
	"github.com/xiaozhi-hub/hub/mcpserver"
)

type bearer struct{ next http.RoundTripper }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+testToken)
	return b.next.RoundTrip(r)
}

func connectGo(t *testing.T, url string, changed chan<- struct{}) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "go-test", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case changed <- struct{}{}:
			default:
			}
		},
	})
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{
		Endpoint: url, HTTPClient: &http.Client{Transport: bearer{http.DefaultTransport}},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func names(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, tool := range res.Tools {
		out = append(out, tool.Name)
	}
	return out
}

func text(r *mcp.CallToolResult) string {
	var parts []string
	for _, c := range r.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// With more devices than DirectLimit, the fixed hub tools are offered, and
// the list switches when the count crosses the limit.
func TestFixedSetAboveLimit(t *testing.T) {
	home := ct.Home()
	reg, devs := ct.NewHome(t, home[:3])
	changed := make(chan struct{}, 1)
	cs := connectGo(t, startServer(t, reg, mcpserver.Options{DirectLimit: 2}), changed)
	ctx := context.Background()

	got := names(t, cs)
	want := []string{"call_device_tool", "get_device", "search_devices", "send_iot_commands"}
	if !slices.Equal(got, want) {
		t.Fatalf("tools %v, want %v", got, want)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "search_devices", Arguments: map[string]any{"query": "客厅的灯"}})
	if err != nil || res.IsError {
		t.Fatalf("search_devices: %v %+v", err, res)
	}
	var sr catalog.SearchResult
	if err := json.Unmarshal([]byte(text(res)), &sr); err != nil || len(sr.Results) == 0 || sr.Results[0].ID != "aa:00:00:00:00:01" {
		t.Fatalf("search result %s", text(res))
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "call_device_tool", Arguments: map[string]any{
		"device_id": "aa:00:00:00:00:01", "tool": "self.lamp.turn_on", "arguments": map[string]any{}}})
	if err != nil || res.IsError || devs["aa:00:00:00:00:01"].State("lamp", "power") != true {
		t.Fatalf("call_device_tool: %v %+v", err, res)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "call_device_tool", Arguments: map[string]any{
		"device_id": "aa:00:00:00:00:01", "tool": "self.audio_speaker.set_volume", "arguments": map[string]any{"volume": "loud"}}})
	if err != nil || !res.IsError || !strings.Contains(text(res), "invalid_argument") {
		t.Fatalf("invalid arguments: %v %+v", err, res)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "send_iot_commands", Arguments: map[string]any{
		"device_id": "aa:00:00:00:00:02", "commands": []any{map[string]any{"name": "Lamp", "method": "TurnOn"}}}})
	if err != nil || res.IsError || devs["aa:00:00:00:00:02"].State("Lamp", "power") != true {
		t.Fatalf("send_iot_commands: %v %+v", err, res)
	}

	// Two devices go offline: now at the limit, device tools are offered.
	devs["aa:00:00:00:00:02"].Disconnect()
	devs["aa:00:00:00:00:03"].Disconnect()
	select {
	case <-changed:
	case <-time.After(5 * time.Second):
		t.Fatal("no list_changed when switching to direct tools")
	}
	got = names(t, cs)
	if !slices.Contains(got, catalog.Name("aa:00:00:00:00:01", "self.lamp.turn_off")) || slices.Contains(got, "call_device_tool") {
		t.Fatalf("direct mode tools: %v", got)
	}
}

func TestToolChangeNotifies(t *testing.T) {
	home := ct.Home()
	reg, devs := ct.NewHome(t, home[:1])
	changed := make(chan struct{}, 1)
	cs := connectGo(t, startServer(t, reg, mcpserver.Options{}), changed)
	if !slices.Contains(names(t, cs), catalog.Name(home[0].ID, "self.lamp.turn_on")) {
		t.Fatal("lamp tool missing")
	}
	// The device reconnects with a new firmware that has one more tool.
	d := devs[home[0].ID]
	d.Spec.Tools = append(d.Spec.Tools, ct.RGBTool)
	d.Reconnect(t)
	select {
	case <-changed:
	case <-time.After(5 * time.Second):
		t.Fatal("no list_changed after tools_changed")
	}
	if !slices.Contains(names(t, cs), catalog.Name(home[0].ID, "self.light.set_rgb")) {
		t.Fatal("new tool not listed")
	}
}
