package mcpclient_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/mcpclient"
	"github.com/xiaozhi-hub/hub/protocol"
)

// responder plays the device side: it sees each request the client sends
// and may answer with a firmware-shaped reply.
type responder struct {
	mu     sync.Mutex
	sent   []map[string]any
	answer func(req map[string]any) (string, bool) // JSON payload to deliver
	c      *mcpclient.Client
	wg     sync.WaitGroup
}

func newClient(t *testing.T, answer func(map[string]any) (string, bool), opts mcpclient.Options) (*mcpclient.Client, *responder) {
	r := &responder{answer: answer}
	r.c = mcpclient.New(func(_ context.Context, payload []byte) error {
		var req map[string]any
		if err := json.Unmarshal(payload, &req); err != nil {
			t.Errorf("client sent invalid JSON: %s", payload)
		}
		r.mu.Lock()
		r.sent = append(r.sent, req)
		r.mu.Unlock()
		if reply, ok := r.answer(req); ok {
			r.wg.Add(1)
			go func() { // replies arrive asynchronously, as from a read loop
				defer r.wg.Done()
				m, err := protocol.DecodeRPC([]byte(reply))
				if err != nil {
					t.Errorf("bad test reply %s: %v", reply, err)
					return
				}
				r.c.Deliver(m)
			}()
		}
		return nil
	}, opts)
	t.Cleanup(r.wg.Wait)
	return r.c, r
}

func id(req map[string]any) any { return req["id"] }

func TestInitializeSendsFirmwareShape(t *testing.T) {
	c, r := newClient(t, func(req map[string]any) (string, bool) {
		if req["method"] == "initialize" {
			return fmt.Sprintf(`{"jsonrpc":"2.0","id":%v,"result":{"protocolVersion":"2024-11-05","capabilities":{"tools":{}},"serverInfo":{"name":"bread-compact-wifi","version":"2.4.2"}}}`, id(req)), true
		}
		return "", false
	}, mcpclient.Options{Vision: &mcpclient.Vision{URL: "http://hub/vision", Token: "t"}})
	info, err := c.Initialize(context.Background())
	if err != nil || info.Name != "bread-compact-wifi" || info.Version != "2.4.2" {
		t.Fatalf("%+v %v", info, err)
	}
	if len(r.sent) != 2 || r.sent[1]["method"] != "notifications/initialized" || r.sent[1]["id"] != nil {
		t.Fatalf("want initialize then notifications/initialized, got %v", r.sent)
	}
	params := r.sent[0]["params"].(map[string]any)
	vision := params["capabilities"].(map[string]any)["vision"].(map[string]any)
	if params["protocolVersion"] != "2024-11-05" || vision["url"] != "http://hub/vision" || r.sent[0]["jsonrpc"] != "2.0" {
		t.Fatalf("initialize params = %v", params)
	}
	if _, isNum := r.sent[0]["id"].(float64); !isNum {
		t.Fatal("ids must be JSON numbers: the firmware drops string ids")
	}
}

func TestListToolsFollowsNameCursorsWithFreshIDs(t *testing.T) {
	pages := map[string]string{
		"":  `{"tools":[{"name":"a","description":"A","inputSchema":{"type":"object","properties":{}}}],"nextCursor":"b"}`,
		"b": `{"tools":[{"name":"b","description":"B","inputSchema":{"type":"object","properties":{}}}],"nextCursor":"c"}`,
		"c": `{"tools":[{"name":"c","description":"C","inputSchema":{"type":"object","properties":{}},"annotations":{"audience":["user"]}}]}`,
	}
	c, r := newClient(t, func(req map[string]any) (string, bool) {
		p := req["params"].(map[string]any)
		cur, _ := p["cursor"].(string)
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%v,"result":%s}`, id(req), pages[cur]), true
	}, mcpclient.Options{})
	tools, err := c.ListTools(context.Background())
	if err != nil || len(tools) != 3 || tools[2].Name != "c" || !tools[2].UserOnly || tools[0].UserOnly {
		t.Fatalf("%+v %v", tools, err)
	}
	ids := map[any]bool{}
	for _, req := range r.sent {
		if ids[req["id"]] {
			t.Fatalf("id %v reused", req["id"])
		}
		ids[req["id"]] = true
		if req["params"].(map[string]any)["withUserTools"] != true {
			t.Fatal("tools/list must ask for user-only tools")
		}
	}
	if _, has := r.sent[0]["params"].(map[string]any)["cursor"]; has {
		t.Fatal("the first page must be asked for without a cursor")
	}
}

func TestListToolsStopsOnRepeatedCursor(t *testing.T) {
	calls := 0
	c, _ := newClient(t, func(req map[string]any) (string, bool) {
		calls++
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%v,"result":{"tools":[{"name":"t%d"}],"nextCursor":"same"}}`, id(req), calls), true
	}, mcpclient.Options{})
	tools, err := c.ListTools(context.Background())
	if !errors.Is(err, mcpclient.ErrIncomplete) || calls != 2 || len(tools) != 2 {
		t.Fatalf("calls=%d tools=%d err=%v", calls, len(tools), err)
	}
}

func TestListToolsPageLimit(t *testing.T) {
	n := 0
	c, _ := newClient(t, func(req map[string]any) (string, bool) {
		n++
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%v,"result":{"tools":[],"nextCursor":"c%d"}}`, id(req), n), true
	}, mcpclient.Options{MaxPages: 5})
	if _, err := c.ListTools(context.Background()); !errors.Is(err, mcpclient.ErrIncomplete) || n != 5 {
		t.Fatalf("pages=%d err=%v", n, err)
	}
}

func TestCallToolErrorsWithAndWithoutCode(t *testing.T) {
	for _, errObj := range []string{`{"message":"Missing valid argument: volume"}`, `{"code":-32602,"message":"Missing valid argument: volume"}`} {
		c, _ := newClient(t, func(req map[string]any) (string, bool) {
			return fmt.Sprintf(`{"jsonrpc":"2.0","id":%v,"error":%s}`, id(req), errObj), true
		}, mcpclient.Options{})
		_, err := c.CallTool(context.Background(), "self.audio_speaker.set_volume", json.RawMessage(`{}`))
		if hub.ErrorCode(err) != hub.EDEVICE || hub.ErrorMessage(err) != "device error: Missing valid argument: volume" {
			t.Fatalf("%s: %v", errObj, err)
		}
	}
}

func TestCallToolTimeoutAndLateReply(t *testing.T) {
	c, _ := newClient(t, func(map[string]any) (string, bool) { return "", false }, mcpclient.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := c.CallTool(ctx, "slow", json.RawMessage(`{}`))
	if hub.ErrorCode(err) != hub.ETIMEOUT {
		t.Fatalf("want timeout, got %v", err)
	}
	// A reply arriving after the timeout is dropped without harm.
	m, _ := protocol.DecodeRPC([]byte(`{"jsonrpc":"2.0","id":1,"result":{"content":[],"isError":false}}`))
	c.Deliver(m)
}

func TestCloseFailsPendingCallsAtOnce(t *testing.T) {
	sent := make(chan struct{}, 3)
	c, _ := newClient(t, func(map[string]any) (string, bool) { sent <- struct{}{}; return "", false }, mcpclient.Options{})
	errc := make(chan error, 3)
	for range 3 {
		go func() {
			_, err := c.CallTool(context.Background(), "x", json.RawMessage(`{}`))
			errc <- err
		}()
	}
	for range 3 {
		<-sent // the call reached the device: it is pending
	}
	c.Close(errors.New("the device disconnected"))
	for range 3 {
		if err := <-errc; hub.ErrorCode(err) != hub.EGONE {
			t.Fatalf("want EGONE, got %v", err)
		}
	}
	if _, err := c.CallTool(context.Background(), "x", nil); hub.ErrorCode(err) != hub.EGONE {
		t.Fatalf("calls after Close must fail with EGONE, got %v", err)
	}
}

func TestMalformedCallResult(t *testing.T) {
	c, _ := newClient(t, func(req map[string]any) (string, bool) {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%v,"result":{"content":"nope"}}`, id(req)), true
	}, mcpclient.Options{})
	if _, err := c.CallTool(context.Background(), "x", nil); hub.ErrorCode(err) != hub.EDEVICE {
		t.Fatalf("want EDEVICE for a result without a content array, got %v", err)
	}
}
