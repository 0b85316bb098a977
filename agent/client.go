package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/xiaozhi-hub/hub"
)

// Chat sends a message to a running hub's agent and calls on for each event
// of the run as it arrives. It returns the done event. Errors carry a
// message for people: a refused token, a hub without a model (with how to
// configure one), an unreachable hub.
func Chat(ctx context.Context, client *http.Client, hubURL, token string, req ChatRequest, on func(Event)) (Event, error) {
	body, _ := json.Marshal(req)
	url := strings.TrimRight(hubURL, "/") + ChatPath
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return Event{}, hub.Errorf(hub.EINVALID, "hub URL %q: %v", hubURL, err)
	}
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("Accept", "text/event-stream")
	if token != "" {
		hr.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(hr)
	if err != nil {
		if ctx.Err() != nil {
			return Event{}, ctx.Err()
		}
		return Event{}, fmt.Errorf("cannot reach the hub at %s (is it running? set --hub): %w", hubURL, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		_ = json.Unmarshal(data, &e)
		msg := e.Error.Message
		if msg == "" {
			msg = strings.TrimSpace(string(data))
		}
		switch resp.StatusCode {
		case http.StatusUnauthorized:
			return Event{}, fmt.Errorf("the hub refused the API token (use --token, XZ_HUB_API_TOKEN, or the api-token file in the hub's data directory): %s", msg)
		case http.StatusNotFound:
			return Event{}, fmt.Errorf("the hub at %s has no agent endpoint (%s)", hubURL, ChatPath)
		case http.StatusServiceUnavailable:
			return Event{}, fmt.Errorf("the hub's agent has no model configured.\n%s", msg)
		}
		return Event{}, fmt.Errorf("the hub answered HTTP %d: %s", resp.StatusCode, msg)
	}
	var done Event
	err = readSSE(resp.Body, func(_, data string) error {
		var e Event
		if err := json.Unmarshal([]byte(data), &e); err != nil {
			return fmt.Errorf("bad event from the hub: %w", err)
		}
		if on != nil {
			on(e)
		}
		if e.Type == EventDone {
			done = e
			return errStop
		}
		return nil
	})
	if err != nil {
		if ctx.Err() != nil {
			return done, ctx.Err()
		}
		return done, fmt.Errorf("reading the hub's answer: %w", err)
	}
	if done.Type != EventDone {
		return done, fmt.Errorf("the hub ended the answer before it was done")
	}
	return done, nil
}

// Printer returns an event handler that prints a run for people: tool
// calls and results as they happen, the answer as it streams.
func Printer(w io.Writer) func(Event) {
	inText := false
	endText := func() {
		if inText {
			fmt.Fprintln(w)
			inText = false
		}
	}
	return func(e Event) {
		switch e.Type {
		case EventToolCall:
			endText()
			where := ""
			if e.DeviceID != "" {
				where = " [" + e.DeviceID + " " + e.Target + "]"
			}
			fmt.Fprintf(w, "→ %s%s %s\n", e.Name, where, clip(string(e.Arguments), 300))
		case EventToolResult:
			endText()
			where := ""
			if e.DeviceID != "" {
				where = " [" + e.DeviceID + " " + e.Target + "]"
			}
			if e.IsError {
				fmt.Fprintf(w, "← %s failed%s (%.0f ms): %s\n", e.Name, where, e.DurationMs, clip(e.Content, 300))
			} else {
				fmt.Fprintf(w, "← %s ok%s (%.0f ms): %s\n", e.Name, where, e.DurationMs, clip(e.Content, 200))
			}
		case EventText:
			fmt.Fprint(w, e.Text)
			inText = true
		case EventError:
			endText()
			fmt.Fprintf(w, "! %s\n", e.Message)
		case EventDone:
			endText()
		}
	}
}

// clip shortens s to n bytes on one line.
func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
