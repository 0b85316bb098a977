package services_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/server"
	"github.com/xiaozhi-hub/hub/server/servertest"
)

// do sends an API request with the admin token and decodes the answer
// into out (if not nil); it returns the status.
func do(t *testing.T, h *server.Hub, method, path string, body any, out any) int {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, h.URL()+path, rd)
	req.Header.Set("Authorization", "Bearer "+servertest.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if out != nil && len(b) > 0 {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %d %s: %v", method, path, resp.StatusCode, b, err)
		}
	}
	return resp.StatusCode
}

// service returns one service as GET /api/services lists it.
func service(t *testing.T, h *server.Hub, name string) (hub.ServiceView, bool) {
	t.Helper()
	var list struct{ Services []hub.ServiceView }
	if st := do(t, h, "GET", "/api/services", nil, &list); st != 200 {
		t.Fatalf("GET /api/services: %d", st)
	}
	for _, s := range list.Services {
		if s.Name == name {
			return s, true
		}
	}
	return hub.ServiceView{}, false
}

// waitService waits until the service's state satisfies ok: the hub
// changes it on its own (a program connecting, a server restarted), so
// the test asks until it sees the state or the test's time runs out.
func waitService(t *testing.T, h *server.Hub, name string, what string, ok func(hub.ServiceView) bool) hub.ServiceView {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		s, found := service(t, h, name)
		if found && ok(s) {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("service %s never became %s: %+v", name, what, s)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func online(s hub.ServiceView) bool  { return s.Online && len(s.Tools) > 0 }
func offline(s hub.ServiceView) bool { return !s.Online }

// callResult is a tool call's answer, or the error body.
type callResult struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	IsError bool `json:"isError"`
	Error   struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func call(t *testing.T, h *server.Hub, svc, tool string, args any) (int, callResult) {
	t.Helper()
	var r callResult
	st := do(t, h, "POST", "/api/services/"+svc+"/tools/"+tool+"/call", map[string]any{"arguments": args}, &r)
	return st, r
}
