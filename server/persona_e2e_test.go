package server_test

import (
	"strings"
	"testing"

	"github.com/coder/websocket"
)

// A device's persona reaches the model (its name and role before the
// agent's own prompt, which still names "this device") and the voice; a
// fact said in one conversation is written into the device's memory by
// the model when the conversation ends and used in the next; clearing the
// memory forgets it.
func TestPersonaAndMemory(t *testing.T) {
	s := newStandIn(t, "My cat is called Tom.", "What is my cat called?", "What is my cat called?")
	h := liveHub(t, s, "", nil)
	const id = "aa:00:00:00:7d:01"
	c := h.rawDevice(id)

	st, body := h.call("GET", "/api/devices/"+id+"/persona", nil)
	eff, _ := body["effective"].(map[string]any)
	if st != 200 || eff["name"] != "小智" || !strings.Contains(eff["role"].(string), "语音助手") {
		t.Fatalf("default persona: %d %v", st, body)
	}
	st, body = h.call("PUT", "/api/devices/"+id+"/persona", map[string]any{"name": "Jarvis", "role": "You are Jarvis, a calm butler.", "language": "en", "voice": "fable"})
	eff, _ = body["effective"].(map[string]any)
	if st != 200 || eff["name"] != "Jarvis" || eff["greeting"] != "Hi, I'm Xiaozhi. How can I help?" {
		t.Fatalf("PUT persona: %d %v", st, body)
	}
	if st, body := h.call("PUT", "/api/devices/"+id+"/persona", map[string]any{"name": strings.Repeat("x", 65)}); st != 422 {
		t.Fatalf("a 65-character name: %d %v", st, body)
	}
	if st, body := h.call("PUT", "/api/devices/"+id+"/persona", map[string]any{"nick": "J"}); st != 400 {
		t.Fatalf("an unknown field: %d %v", st, body)
	}

	if said := spokenTurn(t, c); said != "I do not know." {
		t.Fatalf("first conversation: %q", said)
	}
	sys := s.lastSystem()
	if !strings.HasPrefix(sys, "Your name is Jarvis. You are Jarvis, a calm butler.") || !strings.Contains(sys, "speaking aloud to the device") {
		t.Fatalf("the model's system prompt:\n%s", sys)
	}
	if v := s.lastVoice(); v != "fable" {
		t.Fatalf("spoken in %q, want the persona's fable", v)
	}
	// The conversation ends: the model writes the memory.
	_ = c.Close(websocket.StatusNormalClosure, "")
	h.waitEvent(id, "memory_updated")
	st, body = h.call("GET", "/api/devices/"+id+"/memory", nil)
	if st != 200 || body["text"] != "The person's cat is called Tom." {
		t.Fatalf("memory: %d %v", st, body)
	}
	c = h.rawDevice(id)
	if said := spokenTurn(t, c); said != "Your cat is called Tom." {
		t.Fatalf("the next conversation: %q (system prompt:\n%s)", said, s.lastSystem())
	}
	if st, body := h.call("DELETE", "/api/devices/"+id+"/memory", nil); st != 204 {
		t.Fatalf("DELETE memory: %d %v", st, body)
	}
	if st, body = h.call("GET", "/api/devices/"+id+"/memory", nil); st != 200 || body["text"] != "" {
		t.Fatalf("memory after clearing: %d %v", st, body)
	}
	if said := spokenTurn(t, c); said != "I do not know." {
		t.Fatalf("after clearing: %q", said)
	}
	// An unknown device and an unknown home are 404 to the admin too.
	if st, body := h.call("GET", "/api/devices/aa:00:00:00:7d:99/persona", nil); st != 404 || !strings.Contains(errMessage(body), "is not known to the hub") {
		t.Fatalf("unknown device: %d %v", st, body)
	}
	if st, body := h.call("GET", "/api/homes/nohome/persona", nil); st != 404 {
		t.Fatalf("unknown home: %d %v", st, body)
	}
}
