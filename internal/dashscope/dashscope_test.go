package dashscope

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/coder/websocket"
	"github.com/xiaozhi-hub/hub"
)

// One task, as the service sees it: the key as a bearer token; run-task,
// continue-task and finish-task under one task id, duplex, in the audio
// task group; then the service's events, its audio and task-finished, in
// order. task-failed is an EUNAVAILABLE error that says what the service
// said.
func TestTask(t *testing.T) {
	sent := make(chan []map[string]map[string]any, 1) // what the client sent, once it has
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		ctx := context.Background()
		if r.Header.Get("Authorization") != "Bearer sk-ds" {
			t.Errorf("Authorization %q", r.Header.Get("Authorization"))
		}
		send := func(s string) { _ = c.Write(ctx, websocket.MessageText, []byte(s)) }
		var got []map[string]map[string]any
		for range 3 {
			_, b, err := c.Read(ctx)
			if err != nil {
				return
			}
			var m map[string]map[string]any
			_ = json.Unmarshal(b, &m)
			got = append(got, m)
			if len(got) == 1 {
				send(`{"header":{"task_id":"x","event":"task-started"},"payload":{}}`)
			}
		}
		sent <- got
		send(`{"header":{"task_id":"x","event":"result-generated"},"payload":{"output":{"n":7}}}`)
		_ = c.Write(ctx, websocket.MessageBinary, []byte{1, 2, 3})
		send(`{"header":{"task_id":"x","event":"task-failed","error_code":"InternalError","error_message":"out of voices"},"payload":{}}`)
		_, _, _ = c.Read(ctx)
	}))
	defer srv.Close()
	ctx := context.Background()
	task, err := Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http"), "sk-ds", "speech synthesis", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer task.Close()
	if err := task.Run(ctx, "tts", "SpeechSynthesizer", "cosyvoice-v2", map[string]any{"voice": "v"}); err != nil {
		t.Fatal(err)
	}
	if err := task.Continue(ctx, map[string]any{"text": "你好"}); err != nil {
		t.Fatal(err)
	}
	if err := task.Finish(ctx); err != nil {
		t.Fatal(err)
	}
	var p struct {
		Output struct{ N int } `json:"output"`
	}
	if m, err := task.Read(ctx, &p); err != nil || m.Event != "result-generated" || p.Output.N != 7 {
		t.Fatalf("event %+v %+v %v", m, p, err)
	}
	if m, err := task.Read(ctx, nil); err != nil || string(m.Audio) != "\x01\x02\x03" || m.Event != "" {
		t.Fatalf("audio %+v %v", m, err)
	}
	_, err = task.Read(ctx, nil)
	if hub.ErrorCode(err) != hub.EUNAVAILABLE || !strings.Contains(err.Error(), "speech synthesis (DashScope at 127.0.0.1:") ||
		!strings.Contains(err.Error(), "failed: InternalError out of voices") {
		t.Fatalf("task-failed: %v", err)
	}
	got := <-sent
	id := got[0]["header"]["task_id"]
	for i, action := range []string{"run-task", "continue-task", "finish-task"} {
		h := got[i]["header"]
		if h["action"] != action || h["task_id"] != id || h["streaming"] != "duplex" || len(id.(string)) != 32 {
			t.Errorf("message %d header %v", i, h)
		}
	}
	if p := got[0]["payload"]; p["task_group"] != "audio" || p["task"] != "tts" || p["function"] != "SpeechSynthesizer" || p["model"] != "cosyvoice-v2" {
		t.Errorf("run-task payload %v", p)
	}
	if in := got[1]["payload"]["input"].(map[string]any); in["text"] != "你好" {
		t.Errorf("continue-task payload %v", got[1]["payload"])
	}
}
