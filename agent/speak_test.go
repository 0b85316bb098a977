package agent_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/xiaozhi-hub/hub/agent"
)

// A spoken turn tells the model which device it speaks through (so that
// "声音大一点" reaches that device), streams the answer's text, and keeps
// the conversation per device.
func TestSpeakThroughADevice(t *testing.T) {
	b := func(tr turn) action { return action{text: "好的，已经调大了。"} }
	a, f, _, _ := start(t, setup{provider: agent.ProviderOpenAI}, b)
	var deltas strings.Builder
	text, err := a.Speak(context.Background(), "aa:00:00:00:00:03", "声音大一点", func(d string) { deltas.WriteString(d) })
	if err != nil || text != "好的，已经调大了。" || deltas.String() != text {
		t.Fatalf("Speak = %q %v (streamed %q)", text, err, deltas.String())
	}
	req := f.requests()[0]
	system := ""
	for _, m := range req["messages"].([]any) {
		if mm := obj(m); str(mm["role"]) == "system" {
			system = str(mm["content"])
		}
	}
	if !strings.Contains(system, "speaking aloud to the device 小智音箱 (id aa:00:00:00:00:03)") {
		t.Fatalf("the system prompt does not name the device spoken to:\n%s", system)
	}
	// The device's next turn continues its conversation; another device's does not.
	if _, err := a.Speak(context.Background(), "aa:00:00:00:00:03", "再大一点", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Speak(context.Background(), "aa:00:00:00:00:12", "你好", nil); err != nil {
		t.Fatal(err)
	}
	reqs := f.requests()
	if n := len(reqs[1]["messages"].([]any)); n != 4 { // system, user, assistant, user
		t.Fatalf("the device's second turn sent %d messages", n)
	}
	if n := len(reqs[2]["messages"].([]any)); n != 2 {
		t.Fatalf("another device's first turn sent %d messages", n)
	}
	// A plain run names no device.
	if _, err := a.Run(context.Background(), "s", "hi", nil); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(fmt.Sprint(f.requests()[3]["messages"]), "speaking aloud") {
		t.Fatal("a plain run's prompt names a device spoken to")
	}
}
