package services_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/server/servertest"
	"github.com/xiaozhi-hub/hub/services/servicestest"
)

// The community's reference client, mcp_pipe.py, connects the calculator
// to a service's URL exactly as it would to xiaozhi.me's: the tool is
// listed, runs over REST and is recorded; the service goes offline when
// the pipe dies (its tools still listed, calls failing at once with 409)
// and comes back when the pipe runs again; deleting the service closes
// the connection and its token is refused from then on.
func TestReferencePipe(t *testing.T) {
	vendored, err := os.ReadFile(servicestest.PipeScript())
	if err != nil {
		t.Fatal(err)
	}
	// 78/mcp-calculator c537f71's mcp_pipe.py, byte for byte (VENDORED.md).
	if sum := fmt.Sprintf("%x", sha256.Sum256(vendored)); sum != "31af96a0bd83062251bafe31c22cc01dc02a6b687c5775c5f70e3cf552372df8" {
		t.Fatalf("mcp_pipe.py is not the vendored upstream file (sha256 %s)", sum)
	}
	py := servicestest.Python(t)
	calc := servicestest.Calculator(t)
	h, _ := servertest.Start(t, nil)

	var created hub.ServiceView
	if st := do(t, h, "POST", "/api/services", map[string]string{"name": "calc"}, &created); st != http.StatusCreated {
		t.Fatalf("create: %d %+v", st, created)
	}
	if !strings.HasPrefix(created.URL, "ws://127.0.0.1:") || !strings.Contains(created.URL, "/services/ws?token=xzs_") {
		t.Fatalf("url %q", created.URL)
	}
	if s, _ := service(t, h, "calc"); s.URL != "" {
		t.Fatalf("the token is shown again: %+v", s)
	}

	p := servicestest.Pipe(t, py, created.URL, calc)
	s := waitService(t, h, "calc", "online", online)
	if s.Tools[0].Name != "calculator" || !strings.Contains(string(s.Tools[0].InputSchema), "python_expression") || s.Server != "Calculator 1.0" {
		t.Fatalf("listed: %+v", s)
	}
	if m := metricsText(t, h.URL()); !strings.Contains(m, "xiaozhi_hub_services_online 1\n") || !strings.Contains(m, "xiaozhi_hub_services_known 1\n") {
		t.Fatalf("metrics do not count the service online")
	}
	st, r := call(t, h, "calc", "calculator", map[string]string{"python_expression": "(1+2)*3"})
	if st != 200 || r.IsError || len(r.Content) != 1 || !strings.Contains(r.Content[0].Text, `"result":9`) {
		t.Fatalf("call: %d %+v", st, r)
	}
	if st, r := call(t, h, "calc", "calculator", map[string]int{"python_expression": 3}); st != 422 {
		t.Fatalf("arguments against the schema: %d %+v", st, r)
	}
	var calls struct{ Calls []hub.CallRecord }
	do(t, h, "GET", "/api/calls", nil, &calls)
	if len(calls.Calls) == 0 || calls.Calls[0].DeviceID != "service:calc" || calls.Calls[0].Kind != "service" ||
		calls.Calls[0].By != "admin" || calls.Calls[0].Tool != "calculator" {
		t.Fatalf("history: %+v", calls.Calls)
	}

	servicestest.Stop(p) // the pipe dies
	s = waitService(t, h, "calc", "offline", offline)
	if len(s.Tools) != 1 {
		t.Fatalf("tools not kept while offline: %+v", s)
	}
	if st, r := call(t, h, "calc", "calculator", map[string]string{"python_expression": "1"}); st != http.StatusConflict || r.Error.Code != hub.EOFFLINE {
		t.Fatalf("offline call: %d %+v", st, r)
	}

	p = servicestest.Pipe(t, py, created.URL, calc) // and runs again
	waitService(t, h, "calc", "online", online)
	if st, r := call(t, h, "calc", "calculator", map[string]string{"python_expression": "2**10"}); st != 200 || !strings.Contains(r.Content[0].Text, `"result":1024`) {
		t.Fatalf("call after reconnecting: %d %+v", st, r)
	}

	if st := do(t, h, "DELETE", "/api/services/calc", nil, nil); st != http.StatusNoContent {
		t.Fatalf("delete: %d", st)
	}
	if _, found := service(t, h, "calc"); found {
		t.Fatal("deleted service still listed")
	}
	ctx := context.Background()
	_, resp, err := websocket.Dial(ctx, created.URL, nil)
	if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("a revoked token: %v %v", err, resp)
	}
	servicestest.Stop(p)
}

func metricsText(t *testing.T, base string) string {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}
