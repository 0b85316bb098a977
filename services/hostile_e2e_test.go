package services_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/coder/websocket"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/server"
	"github.com/xiaozhi-hub/hub/server/servertest"
)

// program is a service's program written by hand: it connects with the
// token and answers the hub's requests with what the test gives, raw.
type program struct {
	ws *websocket.Conn
	// tools is the raw "tools" array of tools/list; call answers
	// tools/call with a raw result (or nil: no answer).
	tools string
	call  func(args json.RawMessage) string
	// after, if set, runs once the tool list was sent (on the reader).
	after func(ws *websocket.Conn)
	done  chan error
}

func connect(t *testing.T, url string, p *program) *program {
	t.Helper()
	ws, _, err := websocket.Dial(context.Background(), url, nil)
	if err != nil {
		t.Fatal(err)
	}
	ws.SetReadLimit(-1)
	p.ws, p.done = ws, make(chan error, 1)
	go func() { p.done <- p.serve() }()
	t.Cleanup(func() { _ = ws.CloseNow(); <-p.done })
	return p
}

func (p *program) serve() error {
	ctx := context.Background()
	for {
		_, data, err := p.ws.Read(ctx)
		if err != nil {
			return err
		}
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Arguments json.RawMessage `json:"arguments"`
			} `json:"params"`
		}
		if json.Unmarshal(data, &req) != nil || len(req.ID) == 0 {
			continue
		}
		var result string
		switch req.Method {
		case "initialize":
			result = `{"protocolVersion":"2024-11-05","capabilities":{"tools":{}},"serverInfo":{"name":"hostile","version":"0"}}`
		case "tools/list":
			result = `{"tools":` + p.tools + `}`
		case "tools/call":
			if result = p.call(req.Params.Arguments); result == "" {
				continue
			}
		}
		if err := p.ws.Write(ctx, websocket.MessageText, []byte(`{"jsonrpc":"2.0","id":`+string(req.ID)+`,"result":`+result+`}`)); err != nil {
			return err
		}
		if req.Method == "tools/list" && p.after != nil {
			after := p.after
			p.after = nil
			after(p.ws)
		}
	}
}

func create(t *testing.T, h *server.Hub, name string) string {
	t.Helper()
	var v hub.ServiceView
	if st := do(t, h, "POST", "/api/services", map[string]string{"name": name}, &v); st != http.StatusCreated {
		t.Fatalf("create %s: %d", name, st)
	}
	return v.URL
}

// A program is as hostile as a device may be, and is bounded the same
// way: schemas the hub will not check are marked and never fetched; text
// that is not UTF-8 is repaired; a result over the limit fails the call;
// a flood of messages the hub did not ask for closes the connection.
func TestHostileService(t *testing.T) {
	h, _ := servertest.Start(t, nil)

	t.Run("schema bomb and remote $ref", func(t *testing.T) {
		deep := strings.Repeat(`{"type":"array","items":`, 100) + `{}` + strings.Repeat(`}`, 100)
		connect(t, create(t, h, "bomb"), &program{
			tools: `[{"name":"deep","inputSchema":` + deep + `},{"name":"remote","inputSchema":{"$ref":"http://127.0.0.1:1/evil.json"}}]`,
			call:  func(json.RawMessage) string { return `{"content":[{"type":"text","text":"ran"}]}` },
		})
		s := waitService(t, h, "bomb", "online", online)
		for _, tool := range s.Tools {
			if tool.Unchecked == "" {
				t.Errorf("%s: schema not marked unchecked", tool.Name)
			}
		}
		if st, r := call(t, h, "bomb", "remote", map[string]any{}); st != 200 || r.Content[0].Text != "ran" {
			t.Fatalf("remote: %d %+v", st, r)
		}
	})

	t.Run("bad UTF-8", func(t *testing.T) {
		connect(t, create(t, h, "latin"), &program{
			tools: "[{\"name\":\"t\",\"description\":\"caf\xe9\"}]",
			call:  func(json.RawMessage) string { return "{\"content\":[{\"type\":\"text\",\"text\":\"\xff\xfe ok\"}]}" },
		})
		s := waitService(t, h, "latin", "online", online)
		if d := s.Tools[0].Description; !utf8.ValidString(d) || d != "caf\uFFFD" {
			t.Fatalf("description %q", d)
		}
		st, r := call(t, h, "latin", "t", nil)
		if st != 200 || !utf8.ValidString(r.Content[0].Text) || !strings.HasSuffix(r.Content[0].Text, " ok") {
			t.Fatalf("%d %+v", st, r)
		}
	})

	t.Run("huge result", func(t *testing.T) {
		connect(t, create(t, h, "huge"), &program{
			tools: `[{"name":"dump"}]`,
			call: func(json.RawMessage) string {
				return `{"content":[{"type":"text","text":"` + strings.Repeat("x", 1<<20) + `"}]}`
			},
		})
		waitService(t, h, "huge", "online", online)
		st, r := call(t, h, "huge", "dump", nil)
		if st != http.StatusBadGateway || r.Error.Code != hub.EDEVICE || !strings.Contains(r.Error.Message, "more than") {
			t.Fatalf("%d %+v", st, r)
		}
	})

	t.Run("flood", func(t *testing.T) {
		p := connect(t, create(t, h, "flood"), &program{
			tools: `[{"name":"t"}]`,
			call:  func(json.RawMessage) string { return `{"content":[]}` },
			after: func(ws *websocket.Conn) {
				for i := 0; i < 1000; i++ {
					if ws.Write(context.Background(), websocket.MessageText, []byte(`{"jsonrpc":"2.0","method":"notifications/message","params":{}}`)) != nil {
						return
					}
				}
			},
		})
		err := <-p.done
		p.done <- err // for the cleanup
		if websocket.CloseStatus(err) != websocket.StatusPolicyViolation {
			t.Fatalf("the flood's connection ended with %v, not closed by the hub", err)
		}
		waitService(t, h, "flood", "offline", offline)
	})

	t.Run("revoked while connected", func(t *testing.T) {
		p := connect(t, create(t, h, "gone"), &program{tools: `[{"name":"t"}]`, call: func(json.RawMessage) string { return "" }})
		waitService(t, h, "gone", "online", online)
		if st := do(t, h, "DELETE", "/api/services/gone", nil, nil); st != http.StatusNoContent {
			t.Fatalf("delete: %d", st)
		}
		err := <-p.done // closed at once, not at the next ping
		p.done <- err
		if websocket.CloseStatus(err) != websocket.StatusPolicyViolation {
			t.Fatalf("connection ended with %v", err)
		}
	})

	t.Run("tokens", func(t *testing.T) {
		base := strings.Replace(h.URL(), "http://", "ws://", 1) + "/services/ws"
		for _, c := range []struct {
			url    string
			status int
		}{{base, http.StatusUnauthorized}, {base + "?token=xzs_wrong", http.StatusForbidden}} {
			_, resp, err := websocket.Dial(context.Background(), c.url, nil)
			if err == nil || resp == nil || resp.StatusCode != c.status {
				t.Errorf("%s: %v %v", c.url, err, resp)
			}
		}
	})

	t.Run("names", func(t *testing.T) {
		for _, name := range []string{"", "Calc", "a b", strings.Repeat("x", 33), "../x"} {
			if st := do(t, h, "POST", "/api/services", map[string]string{"name": name}, nil); st != 422 {
				t.Errorf("name %q: %d", name, st)
			}
		}
		create(t, h, "dup")
		if st := do(t, h, "POST", "/api/services", map[string]string{"name": "dup"}, nil); st != http.StatusConflict {
			t.Errorf("duplicate: %d", st)
		}
		if st := do(t, h, "POST", "/api/services", map[string]string{"name": "x", "home": "nowhere"}, nil); st != http.StatusNotFound {
			t.Errorf("unknown home: %d", st)
		}
	})
}

// A service's tools stay known across a restart of the hub (offline), and
// its token keeps working.
func TestServiceDurable(t *testing.T) {
	dir := t.TempDir()
	edit := func(c *server.Config) { c.DataDir = dir }
	h, stopHub := servertest.Start(t, edit)
	url := create(t, h, "kept")
	connect(t, url, &program{tools: `[{"name":"t","description":"kept tool"}]`, call: func(json.RawMessage) string { return `{"content":[]}` }})
	waitService(t, h, "kept", "online", online)
	stopHub()

	h, _ = servertest.Start(t, edit)
	s, found := service(t, h, "kept")
	if !found || s.Online || len(s.Tools) != 1 || s.Tools[0].Description != "kept tool" {
		t.Fatalf("after restart: %v %+v", found, s)
	}
	url = strings.Replace(url, strings.TrimPrefix(strings.Split(url, "/services")[0], "ws://"), strings.TrimPrefix(h.URL(), "http://"), 1)
	connect(t, url, &program{tools: `[]`, call: func(json.RawMessage) string { return "" }})
	waitService(t, h, "kept", "online with its new list", func(s hub.ServiceView) bool { return s.Online && len(s.Tools) == 0 })
}
