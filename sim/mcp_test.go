package sim_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/xiaozhi-hub/hub/sim"
)

func TestInitialize(t *testing.T) {
	h := newFakeHub(t)
	d, hc := connect(t, h, sim.Config{Board: "esp-box-3", Firmware: "2.4.2"})
	reply := hc.rpc("initialize", `{"protocolVersion":"2024-11-05","capabilities":{"vision":{"url":"http://v/explain","token":"vt"}}}`)
	want := `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2024-11-05","capabilities":{"tools":{}},"serverInfo":{"name":"esp-box-3","version":"2.4.2"}}}`
	if string(reply) != want {
		t.Errorf("initialize\n got %s\nwant %s", reply, want)
	}
	if u, tok := d.Vision(); u != "http://v/explain" || tok != "vt" {
		t.Errorf("Vision = %q %q", u, tok)
	}
}

// listAll follows nextCursor and returns the raw tool JSON of every page.
func listAll(t *testing.T, hc *hubConn, withUser bool) [][]json.RawMessage {
	t.Helper()
	var pages [][]json.RawMessage
	cursor := ""
	for range 50 {
		params := fmt.Sprintf(`{"withUserTools":%v}`, withUser)
		if cursor != "" {
			params = fmt.Sprintf(`{"cursor":%q,"withUserTools":%v}`, cursor, withUser)
		}
		reply := hc.rpc("tools/list", params)
		if len(reply) > 8100 {
			t.Errorf("page of %d bytes", len(reply))
		}
		var res map[string]json.RawMessage
		result(t, reply, &res)
		var tools []json.RawMessage
		_ = json.Unmarshal(res["tools"], &tools)
		pages = append(pages, tools)
		next, ok := res["nextCursor"]
		if !ok {
			return pages
		}
		if err := json.Unmarshal(next, &cursor); err != nil || cursor == "" {
			t.Fatalf("nextCursor %s must be a non-empty string (omitted on the last page)", next)
		}
		if name := toolName(t, tools[len(tools)-1]); name == cursor {
			t.Fatalf("cursor %q repeats the last tool of the page", cursor)
		}
	}
	t.Fatal("pagination does not end")
	return nil
}

func toolName(t *testing.T, raw json.RawMessage) string {
	var tool struct{ Name string }
	if err := json.Unmarshal(raw, &tool); err != nil {
		t.Fatal(err)
	}
	return tool.Name
}

func TestToolsListPagination(t *testing.T) {
	h := newFakeHub(t)
	d, hc := connect(t, h, sim.Config{})
	if err := d.AddTool(sim.FillerTools("test.filler", 60, 300)...); err != nil {
		t.Fatal(err)
	}
	names := d.ToolNames()
	// AI-visible tools are registered before the user-only ones (docs/protocol.md §8.4).
	if names[len(names)-1] != "self.upgrade_firmware" || names[4] != "test.filler.000" {
		t.Errorf("tool order %v", names)
	}

	pages := listAll(t, hc, false)
	if len(pages) < 3 {
		t.Fatalf("%d pages, want at least 3", len(pages))
	}
	var got []string
	for i, page := range pages {
		size := len(`{"tools":[`)
		for _, tool := range page {
			got = append(got, toolName(t, tool))
			size += len(tool) + 1
			if strings.Contains(string(tool), "annotations") {
				t.Errorf("user-only tool listed without withUserTools: %s", tool)
			}
		}
		if size+30 > 8000 {
			t.Errorf("page %d uses %d bytes + 30 margin > 8000", i, size)
		}
		if i+1 < len(pages) { // the next tool really did not fit
			next := pages[i+1][0]
			if size+len(next)+1+30 <= 8000 {
				t.Errorf("page %d stopped early: %d + %d fits", i, size, len(next)+1)
			}
		}
	}
	var want []string
	for _, n := range names {
		if !strings.HasPrefix(n, "self.get_system_info") && n != "self.reboot" && n != "self.upgrade_firmware" {
			want = append(want, n)
		}
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("listed %v\nwant %v", got, want)
	}

	all := listAll(t, hc, true)
	last := all[len(all)-1]
	upgrade := string(last[len(last)-1])
	wantUpgrade := `{"name":"self.upgrade_firmware","description":"Upgrade firmware from a specific URL. This will download and install the firmware, then reboot the device.","inputSchema":{"type":"object","properties":{"url":{"type":"string","default":"The URL of the firmware binary file to download and install"}}},"annotations":{"audience":["user"]}}`
	if upgrade != wantUpgrade {
		t.Errorf("user-only tool JSON\n got %s\nwant %s", upgrade, wantUpgrade)
	}
}

func TestToolsListErrors(t *testing.T) {
	h := newFakeHub(t)
	d, hc := connect(t, h, sim.Config{})
	if err := d.AddTool(sim.BigTool("test.big", 8000)); err != nil {
		t.Fatal(err)
	}
	// The big tool ends page one and cannot start page two.
	var res map[string]any
	result(t, hc.rpc("tools/list", ""), &res)
	if res["nextCursor"] != "test.big" {
		t.Fatalf("nextCursor = %v", res["nextCursor"])
	}
	e := errorObject(t, hc.rpc("tools/list", `{"cursor":"test.big"}`))
	if e["message"] != "Failed to add tool test.big because of payload size limit" || len(e) != 1 {
		t.Errorf("error %v", e)
	}
}

func TestDroppedMessagesGetNoReply(t *testing.T) {
	h := newFakeHub(t)
	d, hc := connect(t, h, sim.Config{})
	for _, p := range []string{
		`{"jsonrpc":"2.0","id":"1","method":"tools/list"}`,           // string id
		`{"jsonrpc":"2.0","method":"tools/list"}`,                    // no id
		`{"jsonrpc":2.0,"id":1,"method":"tools/list"}`,               // jsonrpc not a string
		`{"id":1,"method":"tools/list"}`,                             // no jsonrpc
		`{"jsonrpc":"2.0","id":1,"method":7}`,                        // method not a string
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":[]}`, // params not an object
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":null}`,
	} {
		hc.sendMCP(p)
	}
	hc.sendMCP(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	hc.sendMCP(`{"jsonrpc":"2.0","id":9,"method":"notifications/x"}`)
	hc.none(200 * time.Millisecond)
	if st := d.Stats(); st.DroppedMCP != 7 || st.Notifications != 2 {
		t.Errorf("stats %+v", st)
	}
	// Unknown methods are answered, with a message and no code. ids are
	// truncated to int, as cJSON's valueint.
	hc.sendMCP(`{"jsonrpc":"2.0","id":5.7,"method":"ping"}`)
	if got, want := string(hc.nextMCP()), `{"jsonrpc":"2.0","id":5,"error":{"message":"Method not implemented: ping"}}`; got != want {
		t.Errorf("got %s\nwant %s", got, want)
	}
}

func TestToolsCallValidation(t *testing.T) {
	h := newFakeHub(t)
	d, hc := connect(t, h, sim.Config{})
	_ = d.AddTool(sim.FillerTools("test.f", 1, 10)...) // level: integer, default 1, 0..10
	for _, tc := range []struct{ params, want string }{
		{``, "Missing params"},
		{`{"arguments":{}}`, "Missing name"},
		{`{"name":5}`, "Missing name"},
		{`{"name":"self.audio_speaker.set_volume","arguments":[]}`, "Invalid arguments"},
		{`{"name":"self.audio_speaker.set_volume","arguments":null}`, "Invalid arguments"},
		{`{"name":"self.nope"}`, "Unknown tool: self.nope"},
		{`{"name":"self.audio_speaker.set_volume"}`, "Missing valid argument: volume"},
		{`{"name":"self.audio_speaker.set_volume","arguments":{"volume":"50"}}`, "Missing valid argument: volume"},
		{`{"name":"self.audio_speaker.set_volume","arguments":{"volume":-1}}`, "Value is below minimum allowed: 0"},
		{`{"name":"self.audio_speaker.set_volume","arguments":{"volume":101}}`, "Value exceeds maximum allowed: 100"},
		{`{"name":"test.f.000","arguments":{"level":11}}`, "Value exceeds maximum allowed: 10"},
	} {
		e := errorObject(t, hc.rpc("tools/call", tc.params))
		if e["message"] != tc.want || len(e) != 1 {
			t.Errorf("%s: error %v, want only message %q", tc.params, e, tc.want)
		}
	}
	if got := hc.callText("test.f.000", `{"level":"9"}`); got != "1" { // wrong type: default
		t.Errorf("optional wrong type gave %s", got)
	}
	if got := hc.callText("test.f.000", `{"level":7.9,"extra":1}`); got != "7" { // truncated
		t.Errorf("truncation gave %s", got)
	}
	// User-only tools are callable by name without being listed.
	info := hc.callText("self.get_system_info", `{}`)
	if !strings.Contains(info, `"mac_address":"aa:bb:cc:00:00:01"`) || !strings.Contains(info, `"minimum_free_heap_size":"`) {
		t.Errorf("system info %s", info)
	}
	calls := d.ReceivedCalls()
	if len(calls) != 14 || calls[0] != "" || calls[5] != "self.nope" || calls[13] != "self.get_system_info" {
		t.Errorf("ReceivedCalls = %q", calls)
	}
}

func TestStatefulTools(t *testing.T) {
	h := newFakeHub(t)
	d, hc := connect(t, h, sim.Config{Lamp: true})
	status := func() map[string]map[string]any {
		var s map[string]map[string]any
		if err := json.Unmarshal([]byte(hc.callText("self.get_device_status", `{}`)), &s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	if s := status(); s["audio_speaker"]["volume"] != 70.0 || s["screen"]["theme"] != "light" || s["network"]["type"] != "wifi" || s["battery"] == nil {
		t.Errorf("initial status %v", s)
	}
	if got := hc.callText("self.audio_speaker.set_volume", `{"volume":35}`); got != "true" {
		t.Errorf("set_volume returned %s", got)
	}
	hc.callText("self.screen.set_brightness", `{"brightness":20}`)
	if got := hc.callText("self.screen.set_theme", `{"theme":"neon"}`); got != "false" {
		t.Errorf("unknown theme returned %s", got)
	}
	hc.callText("self.screen.set_theme", `{"theme":"dark"}`)
	if s := status(); s["audio_speaker"]["volume"] != 35.0 || s["screen"]["brightness"] != 20.0 || s["screen"]["theme"] != "dark" {
		t.Errorf("status after changes %v", s)
	}
	hc.callText("self.lamp.turn_on", `{}`)
	if got := hc.callText("self.lamp.get_state", `{}`); got != `{"power": true}` || !d.LampOn() || d.Volume() != 35 {
		t.Errorf("lamp state %s, LampOn %v", got, d.LampOn())
	}
	// upgrade_firmware: url is optional (its default is the description).
	hc.callText("self.upgrade_firmware", `{}`)
	if !strings.HasPrefix(d.UpgradeURL(), "The URL of") {
		t.Errorf("UpgradeURL = %q", d.UpgradeURL())
	}
	// reboot answers true, then drops the connection about 1 s later.
	start := time.Now()
	if got := hc.callText("self.reboot", `{}`); got != "true" {
		t.Errorf("reboot returned %s", got)
	}
	hc.gone(wait)
	if el := time.Since(start); el < 800*time.Millisecond {
		t.Errorf("dropped after %v", el)
	}
}
