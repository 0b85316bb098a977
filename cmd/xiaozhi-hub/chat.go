package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/xiaozhi-hub/hub/agent"
	"github.com/xiaozhi-hub/hub/server"
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
	hubURL := fs.String("hub", chatEnvOr("XZ_HUB_URL", "http://127.0.0.1:8000"), "the hub's base URL (env XZ_HUB_URL)")
	token := fs.String("token", "", "admin API token (default: env XZ_HUB_API_TOKEN, else the "+server.TokenFile+" file in --data-dir)")
	dataDir := fs.String("data-dir", chatEnvOr("XZ_HUB_DATA_DIR", "data"), "the hub's data directory, to read the API token from (env XZ_HUB_DATA_DIR)")
	session := fs.String("session", "", "continue this conversation (each answer prints its session id)")
	raw := fs.Bool("json", false, "print the events as JSON lines instead")

	// Flags may follow the message: parse, take a word, parse the rest.
	var words []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return 0
			}
			return 2
		}
		if fs.NArg() == 0 {
			break
		}
		words = append(words, fs.Arg(0))
		args = fs.Args()[1:]
	}
	message := strings.TrimSpace(strings.Join(words, " "))
	if message == "" {
		fs.Usage()
		return 2
	}
	tok, err := chatToken(*token, *dataDir)
	if err != nil {
		fmt.Fprintf(stderr, "xiaozhi-hub chat: %v\n", err)
		return 2
	}

	on := agent.Printer(stdout)
	if *raw {
		on = func(e agent.Event) { fmt.Fprintf(stdout, "%s\n", mustJSON(e)) }
	}
	done, err := agent.Chat(ctx, http.DefaultClient, *hubURL, tok, agent.ChatRequest{Message: message, Session: *session}, on)
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

// chatToken finds the API token: the flag, XZ_HUB_API_TOKEN, or the token
// file the hub writes in its data directory.
func chatToken(flagValue, dataDir string) (string, error) {
	if flagValue != "" {
		return flagValue, nil
	}
	if t := os.Getenv("XZ_HUB_API_TOKEN"); t != "" {
		return t, nil
	}
	path := filepath.Join(dataDir, server.TokenFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("no API token: pass --token, set XZ_HUB_API_TOKEN, or run where the hub's data directory is (--data-dir; %s: %v)", path, err)
	}
	return strings.TrimSpace(string(b)), nil
}

func chatEnvOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

func mustJSON(e agent.Event) []byte {
	b, _ := json.Marshal(e)
	return b
}
