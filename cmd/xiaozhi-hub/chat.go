package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/xiaozhi-hub/hub/agent"
)

const chatUsage = `usage: xiaozhi-hub chat [flags] "message"

Asks a running hub's agent to do something ("打开客厅的灯", "turn the study
lamp off") and prints its steps as they happen: the tools it calls, their
results, and its answer. The hub needs a model configured (ANTHROPIC_API_KEY,
OPENAI_API_KEY or OPENAI_BASE_URL in the hub's environment).

Flags (may come before or after the message):
`

// runChat implements `xiaozhi-hub chat "…"`. It returns the exit code: 0
// when the agent answered, 1 when the run or the request failed, 2 for
// usage errors.
func runChat(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("chat", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, chatUsage)
		fs.PrintDefaults()
	}
	hub := addHubFlags(fs)
	session := fs.String("session", "", "continue this conversation (each answer prints its session id)")
	raw := fs.Bool("json", false, "print the events as JSON lines instead")

	words, code := parseInterspersed(fs, args)
	if code >= 0 {
		return code
	}
	message := strings.TrimSpace(strings.Join(words, " "))
	if message == "" {
		fs.Usage()
		return 2
	}
	tok, err := hub.adminToken()
	if err != nil {
		fmt.Fprintf(stderr, "xiaozhi-hub chat: %v\n", err)
		return 2
	}

	on := agent.Printer(stdout)
	if *raw {
		on = func(e agent.Event) { fmt.Fprintf(stdout, "%s\n", mustJSON(e)) }
	}
	done, err := agent.Chat(ctx, http.DefaultClient, hub.url, tok, agent.ChatRequest{Message: message, Session: *session}, on)
	switch {
	case errors.Is(err, context.Canceled):
		fmt.Fprintln(stderr, "xiaozhi-hub chat: interrupted")
		return 1
	case err != nil:
		fmt.Fprintf(stderr, "xiaozhi-hub chat: %v\n", err)
		return 1
	}
	if !*raw {
		fmt.Fprintf(stderr, "(session %s, %d steps, %.1f s; continue with --session %s)\n",
			done.Session, done.Steps, done.DurationMs/1000, done.Session)
	}
	if done.Outcome != agent.OutcomeOK {
		return 1
	}
	return 0
}

func mustJSON(e agent.Event) []byte {
	b, _ := json.Marshal(e)
	return b
}
