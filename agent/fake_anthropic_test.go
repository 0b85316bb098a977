package agent_test

import (
	"encoding/json"
	"net"
	"net/http"
	"slices"
	"testing"
)

// anthropicFake speaks the Messages API: POST /v1/messages with tools and
// tool_use / tool_result blocks, answering JSON or (stream:true) the event
// stream message_start, content_block_start/delta/stop, message_delta,
// message_stop, with tool input split into input_json_delta fragments.
func anthropicFake(t testing.TB, b brain, l ...net.Listener) *fakeLLM {
	return newFake(t, b, l, func(f *fakeLLM) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
				t.Errorf("anthropic: unexpected %s %s", r.Method, r.URL.Path)
				http.NotFound(w, r)
				return
			}
			if r.Header.Get("x-api-key") != "test-key" || r.Header.Get("anthropic-version") != "2023-06-01" {
				t.Errorf("anthropic: headers %v", r.Header)
			}
			body := decodeBody(t, r)
			f.record(body)
			if n, _ := body["max_tokens"].(float64); n <= 0 {
				t.Errorf("anthropic: max_tokens missing")
			}
			if str(body["system"]) == "" {
				t.Errorf("anthropic: no system prompt")
			}
			tr := turn{}
			for _, tl := range list(body["tools"]) {
				m := obj(tl)
				f.checkTool(str(m["name"]), m["input_schema"])
				tr.tools = append(tr.tools, str(m["name"]))
			}
			msgs := list(body["messages"])
			names := map[string]string{} // tool_use id → name
			var lastUses []string
			lastUser := 0
			for i, m := range msgs {
				mm := obj(m)
				role := str(mm["role"])
				if want := []string{"user", "assistant"}[i%2]; role != want {
					t.Errorf("anthropic: message %d has role %s, want %s (roles must alternate)", i, role, want)
				}
				var uses []string
				for _, bl := range list(mm["content"]) {
					b := obj(bl)
					switch str(b["type"]) {
					case "tool_use":
						uses = append(uses, str(b["id"]))
						names[str(b["id"])] = str(b["name"])
						if _, ok := b["input"].(map[string]any); !ok {
							t.Errorf("anthropic: tool_use input %v is not an object", b["input"])
						}
					case "tool_result":
						if !slices.Contains(lastUses, str(b["tool_use_id"])) {
							t.Errorf("anthropic: tool_result for %q answers no tool_use of the previous message %v", b["tool_use_id"], lastUses)
						}
					case "text":
						if role == "user" {
							tr.user, lastUser = str(b["text"]), i
						}
					}
				}
				if role == "assistant" {
					lastUses = uses
				}
			}
			for _, m := range msgs[lastUser+1:] {
				if str(obj(m)["role"]) == "assistant" {
					tr.step++
				}
			}
			if last := obj(msgs[len(msgs)-1]); str(last["role"]) == "user" {
				for _, bl := range list(last["content"]) {
					if b := obj(bl); str(b["type"]) == "tool_result" {
						id := str(b["tool_use_id"])
						isErr, _ := b["is_error"].(bool)
						tr.results = append(tr.results, fakeResult{id: id, name: names[id], content: str(b["content"]), isError: isErr})
					}
				}
			}
			if f.hook != nil {
				f.hook(tr)
			}
			act := f.brain(tr)
			stream, _ := body["stream"].(bool)
			f.answerAnthropic(w, act, stream)
		}
	})
}

func (f *fakeLLM) answerAnthropic(w http.ResponseWriter, act action, stream bool) {
	stop := "end_turn"
	if len(act.calls) > 0 {
		stop = "tool_use"
	}
	type use struct{ id, name, input string }
	var uses []use
	for _, c := range act.calls {
		uses = append(uses, use{f.id("toolu_"), c.name, argsJSON(c.args)})
	}
	if !stream {
		var content []any
		if act.text != "" {
			content = append(content, map[string]any{"type": "text", "text": act.text})
		}
		for _, u := range uses {
			content = append(content, map[string]any{"type": "tool_use", "id": u.id, "name": u.name, "input": json.RawMessage(u.input)})
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"id": f.id("msg_"), "type": "message", "role": "assistant",
			"content": content, "stop_reason": stop, "usage": map[string]int{"input_tokens": 100, "output_tokens": 20}})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	sse(w, "message_start", map[string]any{"type": "message_start", "message": map[string]any{"id": f.id("msg_"), "type": "message",
		"role": "assistant", "content": []any{}, "stop_reason": nil, "usage": map[string]int{"input_tokens": 100, "output_tokens": 1}}})
	idx := 0
	if act.text != "" {
		sse(w, "content_block_start", map[string]any{"type": "content_block_start", "index": idx, "content_block": map[string]any{"type": "text", "text": ""}})
		sse(w, "ping", map[string]any{"type": "ping"})
		for _, piece := range split(act.text, 3) {
			sse(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": idx, "delta": map[string]any{"type": "text_delta", "text": piece}})
		}
		sse(w, "content_block_stop", map[string]any{"type": "content_block_stop", "index": idx})
		idx++
	}
	for _, u := range uses {
		sse(w, "content_block_start", map[string]any{"type": "content_block_start", "index": idx,
			"content_block": map[string]any{"type": "tool_use", "id": u.id, "name": u.name, "input": map[string]any{}}})
		for _, piece := range split(u.input, 3) {
			sse(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": idx, "delta": map[string]any{"type": "input_json_delta", "partial_json": piece}})
		}
		sse(w, "content_block_stop", map[string]any{"type": "content_block_stop", "index": idx})
		idx++
	}
	sse(w, "message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]int{"output_tokens": 20}})
	sse(w, "message_stop", map[string]any{"type": "message_stop"})
}
