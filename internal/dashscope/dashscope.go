// Package dashscope is the task protocol of Alibaba Cloud's DashScope
// WebSocket inference API, which its real-time recognition (Paraformer,
// Fun-ASR: https://help.aliyun.com/zh/model-studio/websocket-for-paraformer-real-time-service)
// and its synthesis (CosyVoice: https://help.aliyun.com/zh/model-studio/cosyvoice-websocket-api)
// share. One connection, with the API key as a bearer token, carries one
// task: the client sends run-task (task group "audio", the task, function,
// model and parameters) and waits for the server's task-started; it sends
// its input (binary audio, or continue-task with text) and finish-task; the
// server sends events (result-generated, then task-finished, or task-failed
// with error_code and error_message) and binary audio. Every message is
// {"header":{…},"payload":{…}}: the header names the client's action or
// the server's event, and the task.
package dashscope

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/coder/websocket"
	"github.com/xiaozhi-hub/hub"
)

// URL is the service's address (Beijing region).
const URL = "wss://dashscope.aliyuncs.com/api-ws/v1/inference"

// header is the header of every message, both ways.
type header struct {
	Action       string `json:"action,omitempty"` // the client's: run-task, continue-task, finish-task
	TaskID       string `json:"task_id"`
	Streaming    string `json:"streaming,omitempty"` // the client's: always duplex
	Event        string `json:"event,omitempty"`     // the server's: task-started, result-generated, task-finished, task-failed
	ErrorCode    string `json:"error_code,omitempty"`
	ErrorMessage string `json:"error_message,omitempty"`
}

// Task is one task on its own connection. Its errors are EUNAVAILABLE and
// name the service: "speech recognition (DashScope at …): …".
type Task struct {
	c     *websocket.Conn
	id    string
	what  string // the service, in errors: "speech recognition"
	where string // "DashScope at host/path"
	in    struct {
		Header  header `json:"header"`
		Payload any    `json:"payload"`
	} // the message Read decodes (one for the task, not one per message; Read is called by one goroutine at a time)
}

// Dial connects to url ("" for URL) with the API key, for a task of the
// service named what (in errors); client makes the handshake (nil: the
// default client).
func Dial(ctx context.Context, url, apiKey, what string, client *http.Client) (*Task, error) {
	if url == "" {
		url = URL
	}
	var id [16]byte
	_, _ = rand.Read(id[:])
	t := &Task{id: hex.EncodeToString(id[:]), what: what,
		where: "DashScope at " + strings.TrimPrefix(strings.TrimPrefix(url, "wss://"), "ws://")}
	c, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + apiKey}}, HTTPClient: client})
	if err != nil {
		return nil, t.fail(err)
	}
	c.SetReadLimit(1 << 20)
	t.c = c
	return t, nil
}

// Run starts the task and returns once the server has said task-started
// (events before it are passed over; task-failed is an error).
func (t *Task) Run(ctx context.Context, task, function, model string, parameters map[string]any) error {
	if err := t.send(ctx, "run-task", map[string]any{"task_group": "audio", "task": task, "function": function,
		"model": model, "parameters": parameters, "input": map[string]any{}}); err != nil {
		return err
	}
	for {
		m, err := t.Read(ctx, nil)
		if err != nil {
			return err
		}
		if m.Event == "task-started" {
			return nil
		}
	}
}

// Continue sends input (continue-task), e.g. {"text": …}.
func (t *Task) Continue(ctx context.Context, input map[string]any) error {
	return t.send(ctx, "continue-task", map[string]any{"input": input})
}

// Finish says the input is complete (finish-task).
func (t *Task) Finish(ctx context.Context) error {
	return t.send(ctx, "finish-task", map[string]any{"input": map[string]any{}})
}

// WriteAudio sends input audio as one binary message.
func (t *Task) WriteAudio(ctx context.Context, audio []byte) error {
	if err := t.c.Write(ctx, websocket.MessageBinary, audio); err != nil {
		return t.fail(err)
	}
	return nil
}

// Message is what the server sent: an event, or audio.
type Message struct {
	Event string // "" for audio
	Audio []byte // a binary message
}

// Read returns the next message, an event's payload decoded into payload
// (a pointer; nil when it is not wanted); task-failed is an error with the
// service's code and message.
func (t *Task) Read(ctx context.Context, payload any) (Message, error) {
	typ, data, err := t.c.Read(ctx)
	if err != nil {
		return Message{}, t.fail(err)
	}
	if typ != websocket.MessageText {
		return Message{Audio: data}, nil
	}
	if payload == nil {
		payload = &struct{}{}
	}
	m := &t.in
	m.Header, m.Payload = header{}, payload
	if json.Unmarshal(data, m) != nil || m.Header.Event == "" {
		return Message{}, t.Errorf("sent something that is not an event: %s", hub.Truncate(data, 120))
	}
	if m.Header.Event == "task-failed" {
		return Message{}, t.Errorf("failed: %s %s", m.Header.ErrorCode, hub.Truncate([]byte(m.Header.ErrorMessage), 160))
	}
	return Message{Event: m.Header.Event}, nil
}

// Close ends the connection.
func (t *Task) Close() { _ = t.c.CloseNow() }

// Errorf is an error of this task's service: "speech synthesis (DashScope
// at …) " and the message.
func (t *Task) Errorf(format string, a ...any) error {
	return hub.Errorf(hub.EUNAVAILABLE, "%s (%s) %s", t.what, t.where, fmt.Sprintf(format, a...))
}

func (t *Task) send(ctx context.Context, action string, payload map[string]any) error {
	b, _ := json.Marshal(map[string]any{"header": header{Action: action, TaskID: t.id, Streaming: "duplex"}, "payload": payload})
	if err := t.c.Write(ctx, websocket.MessageText, b); err != nil {
		return t.fail(err)
	}
	return nil
}

func (t *Task) fail(err error) error {
	return hub.Errorf(hub.EUNAVAILABLE, "%s (%s): %v", t.what, t.where, err)
}
