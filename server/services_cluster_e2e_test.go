package server_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/server"
)

// An endpoint service is the cluster's: made on hub-1, its program
// connects to hub-2 with the same URL's token; hub-2 lists it online,
// hub-1 with the tools hub-2 stored, and both call it (hub-1 through
// hub-2). With its program gone, a call on hub-1 is 409 at once. Deleted
// on hub-1, it is gone from hub-2, its connection there closed and its
// token refused.
func TestServiceSharedAcrossClusterNodes(t *testing.T) {
	nodes := startCluster(t, 2)
	one, two := nodes[0], nodes[1]
	st, body := one.call("POST", "/api/services", map[string]any{"name": "calc"})
	if st != 201 {
		t.Fatalf("POST /api/services on hub-1: %d %v", st, body)
	}
	url := strings.Replace(body["url"].(string), "ws://"+strings.TrimPrefix(one.URL(), "http://"), "ws://"+strings.TrimPrefix(two.URL(), "http://"), 1)
	if url == body["url"] {
		t.Fatalf("the URL %q is not hub-1's (%s)", url, one.URL())
	}
	state := func(c *clusterNode) (hub.ServiceView, error) { return server.ServicesOf(c.Hub).Service(nil, "calc") }
	waitFor(t, "calc known on hub-2", func() bool { _, err := state(two); return err == nil })

	stop, _ := programConn(t, url, calcTool)
	waitFor(t, "calc online on hub-2", func() bool { v, err := state(two); return err == nil && v.Online && len(v.Tools) == 1 })
	waitFor(t, "calc's tools on hub-1", func() bool { v, err := state(one); return err == nil && !v.Online && len(v.Tools) == 1 })
	args := map[string]any{"arguments": map[string]string{"python_expression": "6*7"}}
	for _, c := range []*clusterNode{two, one} {
		if st, r := c.call("POST", "/api/services/calc/tools/calculator/call", args); st != 200 || !strings.Contains(toJSON(r), `\"result\":\"42\"`) {
			t.Fatalf("call on %s: %d %s", c.name, st, toJSON(r))
		}
	}
	stop()
	waitFor(t, "calc offline on hub-2", func() bool { v, err := state(two); return err == nil && !v.Online })
	if st, r := one.call("POST", "/api/services/calc/tools/calculator/call", args); st != 409 || !strings.Contains(toJSON(r), "device_offline") || !strings.Contains(toJSON(r), "is offline") {
		t.Fatalf("call on hub-1 with the program gone: %d %s", st, toJSON(r))
	}
	_, ended := programConn(t, url, calcTool)
	waitFor(t, "calc online again on hub-2", func() bool { v, err := state(two); return err == nil && v.Online })
	if _, list := one.call("GET", "/api/services", nil); !strings.Contains(toJSON(list), `"name":"calculator"`) {
		t.Fatalf("hub-1 lists %s", toJSON(list))
	}

	if st, _ := one.call("DELETE", "/api/services/calc", nil); st != 204 {
		t.Fatalf("DELETE on hub-1: %d", st)
	}
	waitFor(t, "calc gone from hub-2", func() bool { _, err := state(two); return hub.ErrorCode(err) == hub.ENOTFOUND })
	select {
	case <-ended:
	case <-time.After(30 * time.Second):
		t.Fatal("hub-2 did not close the deleted service's connection")
	}
	_, resp, err := websocket.Dial(context.Background(), url, nil)
	if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("the deleted service's token on hub-2: %v %v", err, resp)
	}
}
