package agent_test

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// openaiFake speaks chat completions: POST /v1/chat/completions with
// function tools, tool_calls and role "tool" messages, answering JSON or
// (stream:true) chunks in which each tool call's id and name come first and
// its arguments follow in fragments, then finish_reason, usage and [DONE].
func openaiFake(t testing.TB, b brain, l ...net.Listener) *fakeLLM {
	return newFake(t, b, l, func(f *fakeLLM) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
				t.Errorf("openai: unexpected %s %s", r.Method, r.URL.Path)
				http.NotFound(w, r)
				return
			}
			if r.Header.Get("Authorization") != "Bearer test-key" {
				t.Errorf("openai: Authorization %q", r.Header.Get("Authorization"))
			}
			body := decodeBody(t, r)
			f.record(body)
			tr := turn{}
			for _, tl := range list(body["tools"]) {
				m := obj(tl)
				fn := obj(m["function"])
				if str(m["type"]) != "function" {
					t.Errorf("openai: tool type %v", m["type"])
				}
				f.checkTool(str(fn["name"]), fn["parameters"])
				tr.tools = append(tr.tools, str(fn["name"]))
			}
			msgs := list(body["messages"])
			if len(msgs) == 0 || str(obj(msgs[0])["role"]) != "system" {
				t.Errorf("openai: the first message is not the system prompt")
			}
			names := map[string]string{}
			var pending []string // tool_call ids of the last assistant message not yet answered
			lastUser := 0
			for i, m := range msgs {
				mm := obj(m)
				switch str(mm["role"]) {
				case "user":
					tr.user, lastUser = str(mm["content"]), i
					if len(pending) > 0 {
						t.Errorf("openai: user message while tool calls %v are unanswered", pending)
					}
				case "assistant":
					if len(pending) > 0 {
						t.Errorf("openai: assistant message while tool calls %v are unanswered", pending)
					}
					pending = nil
					for _, tc := range list(mm["tool_calls"]) {
						c := obj(tc)
						fn := obj(c["function"])
						if str(c["type"]) != "function" || !json.Valid([]byte(str(fn["arguments"]))) && str(fn["arguments"]) != "{not json" {
							t.Errorf("openai: tool call %v", c)
						}
						pending = append(pending, str(c["id"]))
						names[str(c["id"])] = str(fn["name"])
					}
				case "tool":
					id := str(mm["tool_call_id"])
					if !slices.Contains(pending, id) {
						t.Errorf("openai: tool message for %q answers no pending tool call %v", id, pending)
					}
					pending = slices.DeleteFunc(pending, func(p string) bool { return p == id })
				}
			}
			for _, m := range msgs[lastUser+1:] {
				if str(obj(m)["role"]) == "assistant" {
					tr.step++
				}
			}
			for i := len(msgs) - 1; i > lastUser && str(obj(msgs[i])["role"]) == "tool"; i-- {
				mm := obj(msgs[i])
				content := str(mm["content"])
				id := str(mm["tool_call_id"])
				tr.results = append([]fakeResult{{id: id, name: names[id], content: strings.TrimPrefix(content, "Error: "),
					isError: strings.HasPrefix(content, "Error: ")}}, tr.results...)
			}
			if f.hook != nil {
				f.hook(tr)
			}
			act := f.brain(tr)
			stream, _ := body["stream"].(bool)
			f.answerOpenAI(w, act, stream)
		}
	})
}

func (f *fakeLLM) answerOpenAI(w http.ResponseWriter, act action, stream bool) {
	finish := "stop"
	if len(act.calls) > 0 {
		finish = "tool_calls"
	}
	type call struct{ id, name, args string }
	var calls []call
	for _, c := range act.calls {
		calls = append(calls, call{f.id("call_"), c.name, argsJSON(c.args)})
	}
	if !stream {
		msg := map[string]any{"role": "assistant", "content": nil}
		if act.text != "" {
			msg["content"] = act.text
		}
		var tcs []any
		for _, c := range calls {
			tcs = append(tcs, map[string]any{"id": c.id, "type": "function", "function": map[string]any{"name": c.name, "arguments": c.args}})
		}
		if tcs != nil {
			msg["tool_calls"] = tcs
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"id": f.id("chatcmpl-"), "object": "chat.completion",
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
			"usage":   map[string]int{"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	id := f.id("chatcmpl-")
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{"id": id, "object": "chat.completion.chunk",
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
	}
	sse(w, "", chunk(map[string]any{"role": "assistant", "content": ""}, nil))
	for _, piece := range split(act.text, 3) {
		if piece != "" {
			sse(w, "", chunk(map[string]any{"content": piece}, nil))
		}
	}
	for i, c := range calls {
		sse(w, "", chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "id": c.id, "type": "function",
			"function": map[string]any{"name": c.name, "arguments": ""}}}}, nil))
		for _, piece := range split(c.args, 3) {
			sse(w, "", chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "function": map[string]any{"arguments": piece}}}}, nil))
		}
	}
	sse(w, "", chunk(map[string]any{}, finish))
	sse(w, "", map[string]any{"id": id, "object": "chat.completion.chunk", "choices": []any{},
		"usage": map[string]int{"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}})
	fmt.Fprint(w, "data: [DONE]\n\n")
}
