package server_test

// Golden device conversations, in the manner of go-sdk's conformance tests:
// each testdata/*.txtar file is a device script and the hub's side of the
// conversation. A real hub (servertest) runs on loopback; a small scripted
// device speaks raw WebSocket frames, byte for byte as written in the file
// (not package sim, which is our own model of the firmware). What the hub
// sends the device, and what its API answers, is compared with the file's
// "hub" section; run with -update to rewrite that section.
//
// File sections:
//
//	-- connect --   upgrade request headers, one "Name: value" a line
//	-- device --    the script, one step a line ("#" starts a comment):
//	                  send <text>       the device sends a text frame; $SID is
//	                                    the session_id of the hub's hello, $ID
//	                                    the id of the last request received
//	                  recv              the next frame from the hub is recorded
//	                  call METHOD PATH [JSON]
//	                                    an API request is started (admin token)
//	                  await             the oldest started request's answer is
//	                                    recorded
//	                  get PATH until TEXT
//	                                    GET PATH is polled until its answer
//	                                    contains TEXT, then recorded
//	-- hub --       the expected record
//
// A line "skip: <reason>" in the comment skips the file (for behaviour that
// another branch brings; the reason says which).
//
// The record is stable: the session id becomes <sid>, the ids the hub gives
// its requests become <id1>, <id2>, … in order of appearance, API answers
// are re-encoded with sorted keys, and timestamps and durations are replaced.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/xiaozhi-hub/hub/server/servertest"
)

var update = flag.Bool("update", false, "rewrite the hub section of testdata/*.txtar from what the hub does")

func TestGoldenConversations(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txtar")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden conversations in testdata: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			ar := parseTxtar(data)
			if m := regexp.MustCompile(`(?m)^skip: (.*)$`).FindSubmatch(ar.comment); m != nil {
				t.Skip(string(m[1])) // its hub section is written by hand until then
			}
			got := runConversation(t, ar)
			want := ar.section("hub")
			if *update {
				ar.set("hub", got)
				if err := os.WriteFile(file, ar.format(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if !bytes.Equal(got, want) {
				t.Errorf("the hub's side of the conversation differs (run go test ./server -run TestGoldenConversations -update and review the diff)\n--- want\n%s--- got\n%s", want, got)
			}
		})
	}
}

// conversation is one scripted device against the hub.
type conversation struct {
	t       *testing.T
	ctx     context.Context
	h       *testHub
	c       *websocket.Conn
	out     bytes.Buffer
	sid     string
	lastID  string
	ids     map[string]string // hub-assigned id → <idN>
	pending []chan string     // API answers, oldest first
	labels  []string          // and their "METHOD PATH"
}

func runConversation(t *testing.T, ar *txtar) []byte {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	h := startHub(t, "", nil)
	cv := &conversation{t: t, ctx: ctx, h: h, ids: map[string]string{}}
	header := http.Header{}
	sc := bufio.NewScanner(bytes.NewReader(ar.section("connect")))
	for sc.Scan() {
		if name, value, ok := strings.Cut(sc.Text(), ":"); ok {
			header.Set(strings.TrimSpace(name), strings.TrimSpace(value))
		}
	}
	c, _, err := websocket.Dial(ctx, h.DeviceURL(), &websocket.DialOptions{HTTPHeader: header})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	c.SetReadLimit(1 << 20)
	defer c.CloseNow()
	cv.c = c
	for n, line := range strings.Split(string(ar.section("device")), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		verb, rest, _ := strings.Cut(line, " ")
		if err := cv.step(verb, rest); err != nil {
			t.Fatalf("device line %d (%s): %v\nrecord so far:\n%s", n+1, line, err, cv.out.Bytes())
		}
	}
	// Every started request must have been awaited: its answer is part of
	// the conversation.
	if len(cv.pending) > 0 {
		t.Fatalf("%d API requests were started but not awaited", len(cv.pending))
	}
	return cv.out.Bytes()
}

func (cv *conversation) step(verb, rest string) error {
	switch verb {
	case "send":
		text := strings.ReplaceAll(strings.ReplaceAll(rest, "$SID", cv.sid), "$ID", cv.lastID)
		return cv.c.Write(cv.ctx, websocket.MessageText, []byte(text))
	case "recv":
		rctx, cancel := context.WithTimeout(cv.ctx, 10*time.Second)
		defer cancel()
		typ, data, err := cv.c.Read(rctx)
		if err != nil {
			return fmt.Errorf("no frame from the hub: %w", err)
		}
		if typ != websocket.MessageText {
			fmt.Fprintf(&cv.out, "recv binary %d bytes\n", len(data))
			return nil
		}
		cv.learn(data)
		fmt.Fprintf(&cv.out, "recv %s\n", cv.normalize(data))
	case "call":
		fields := strings.SplitN(rest, " ", 3)
		if len(fields) < 2 {
			return fmt.Errorf("want call METHOD PATH [JSON]")
		}
		var body string
		if len(fields) == 3 {
			body = fields[2]
		}
		ch := make(chan string, 1)
		cv.pending = append(cv.pending, ch)
		label := fields[0] + " " + fields[1]
		// The answer is normalised by await, on this goroutine: the
		// id map is only touched here.
		go func() { ch <- cv.api(fields[0], fields[1], body) }()
		cv.labels = append(cv.labels, label)
	case "await":
		if len(cv.pending) == 0 {
			return fmt.Errorf("no API request to await")
		}
		ch, label := cv.pending[0], cv.labels[0]
		cv.pending, cv.labels = cv.pending[1:], cv.labels[1:]
		select {
		case s := <-ch:
			fmt.Fprintf(&cv.out, "api %s -> %s\n", label, cv.normalize([]byte(s)))
		case <-cv.ctx.Done():
			return cv.ctx.Err()
		}
	case "get":
		path, text, ok := strings.Cut(rest, " until ")
		if !ok {
			return fmt.Errorf("want get PATH until TEXT")
		}
		var last string
		deadline := time.Now().Add(10 * time.Second)
		for last = cv.normalize([]byte(cv.api("GET", path, ""))); !strings.Contains(last, text); last = cv.normalize([]byte(cv.api("GET", path, ""))) {
			if time.Now().After(deadline) {
				return fmt.Errorf("GET %s never contained %s; last: %s", path, text, last)
			}
			time.Sleep(10 * time.Millisecond)
		}
		fmt.Fprintf(&cv.out, "api GET %s -> %s\n", path, last)
	default:
		return fmt.Errorf("unknown step %q", verb)
	}
	return nil
}

// learn takes the session id from the hub's hello and the id of a request.
func (cv *conversation) learn(data []byte) {
	var m struct {
		Type      string `json:"type"`
		SessionID string `json:"session_id"`
		Payload   struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		} `json:"payload"`
	}
	if json.Unmarshal(data, &m) != nil {
		return
	}
	if m.Type == "hello" && m.SessionID != "" {
		cv.sid = m.SessionID
	}
	if m.Payload.Method != "" && len(m.Payload.ID) > 0 {
		cv.lastID = string(m.Payload.ID)
		if _, ok := cv.ids[cv.lastID]; !ok {
			cv.ids[cv.lastID] = fmt.Sprintf("<id%d>", len(cv.ids)+1)
		}
	}
}

// jsonrpcID matches an id, also inside a JSON string (escaped quotes).
var jsonrpcID = regexp.MustCompile(`(\\?"id\\?":)(\d+)`)

// normalize replaces the session id and the ids the hub assigned.
func (cv *conversation) normalize(data []byte) string {
	s := string(data)
	if cv.sid != "" {
		s = strings.ReplaceAll(s, cv.sid, "<sid>")
	}
	return jsonrpcID.ReplaceAllStringFunc(s, func(m string) string {
		sub := jsonrpcID.FindStringSubmatch(m)
		if n, ok := cv.ids[sub[2]]; ok {
			return sub[1] + n
		}
		return m
	})
}

// api makes a request with the admin token and returns "<status> <body>",
// the body re-encoded with sorted keys and with times and durations
// replaced. It touches nothing of cv but ctx and h, so it may run on any
// goroutine.
func (cv *conversation) api(method, path, body string) string {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(cv.ctx, method, cv.h.URL()+path, rd)
	if err != nil {
		return "request: " + err.Error()
	}
	req.Header.Set("Authorization", "Bearer "+servertest.Token)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return "request: " + err.Error()
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	var v any
	if json.Unmarshal(data, &v) == nil {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(stable(v))
		data = bytes.TrimRight(b.Bytes(), "\n")
	}
	return strconv.Itoa(res.StatusCode) + " " + string(data)
}

// stable replaces values that change from run to run: times and durations.
func stable(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			lk := strings.ToLower(k)
			switch {
			case strings.HasSuffix(lk, "at") || lk == "lastseen" || lk == "time" || lk == "since":
				if _, ok := x.(string); ok {
					v[k] = "<time>"
					continue
				}
			case strings.HasSuffix(lk, "ms") || strings.Contains(lk, "duration"):
				if _, ok := x.(float64); ok {
					v[k] = "<duration>"
					continue
				}
			}
			v[k] = stable(x)
		}
	case []any:
		for i, x := range v {
			v[i] = stable(x)
		}
	case string:
		if _, err := time.Parse(time.RFC3339Nano, v); err == nil {
			return "<time>"
		}
	}
	return v
}
