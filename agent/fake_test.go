package agent_test

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"

	"github.com/xiaozhi-hub/hub/catalog"
)

// The fakes below stand in for the LLM APIs. Each speaks its provider's
// wire format (request and response JSON, streaming events), checks what
// the hub sends (tool schemas and names, tool-result linkage, headers),
// and turns the conversation into a neutral turn for a scripted brain.

// turn is the conversation as the brain sees it.
type turn struct {
	user    string       // the latest user text
	step    int          // assistant answers since that text
	results []fakeResult // tool results of the latest turn
	tools   []string     // tools offered
}

type fakeResult struct {
	id, name, content string
	isError           bool
}

type fakeCall struct {
	name string
	args any
}

// action is what the brain answers: tool calls, or else the final text.
type action struct {
	calls []fakeCall
	text  string
}

type brain func(turn) action

// fakeLLM is an httptest server for one provider.
type fakeLLM struct {
	t      testing.TB
	srv    *httptest.Server
	brain  brain
	mu     sync.Mutex
	bodies []map[string]any // every request body
	hook   func(turn)       // called before answering, e.g. to disconnect a device
	nextID int
}

func (f *fakeLLM) requests() []map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.bodies)
}

func (f *fakeLLM) id(prefix string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nextID++
	return fmt.Sprintf("%s%03d", prefix, f.nextID)
}

func (f *fakeLLM) record(body map[string]any) {
	f.mu.Lock()
	f.bodies = append(f.bodies, body)
	f.mu.Unlock()
}

// The server listens on loopback, or on l[0] when given (a pipenet
// listener, for a test in a synctest bubble).
func newFake(t testing.TB, b brain, l []net.Listener, handler func(f *fakeLLM) http.HandlerFunc) *fakeLLM {
	f := &fakeLLM{t: t, brain: b}
	f.srv = httptest.NewUnstartedServer(handler(f))
	if len(l) > 0 {
		f.srv.Listener.Close()
		f.srv.Listener = l[0]
	}
	f.srv.Start()
	t.Cleanup(f.srv.Close)
	return f
}

// checkTools asserts that every offered tool is a valid function with an
// object schema, in the provider's shape.
func (f *fakeLLM) checkTool(name string, schema any) {
	if !catalog.NamePattern.MatchString(name) {
		f.t.Errorf("tool name %q is not a valid function name", name)
	}
	s, _ := schema.(map[string]any)
	if s["type"] != "object" {
		f.t.Errorf("tool %s: schema %v is not an object schema", name, schema)
	}
}

// sse writes one Server-Sent Event.
func sse(w http.ResponseWriter, event string, data any) {
	b, _ := json.Marshal(data)
	if event != "" {
		fmt.Fprintf(w, "event: %s\n", event)
	}
	fmt.Fprintf(w, "data: %s\n\n", b)
	if fl, ok := w.(http.Flusher); ok {
		fl.Flush()
	}
}

// split cuts s into about n pieces (between characters), as providers
// split streamed text and arguments.
func split(s string, n int) []string {
	r := []rune(s)
	var out []string
	size := max(1, len(r)/n)
	for len(r) > size {
		out = append(out, string(r[:size]))
		r = r[size:]
	}
	return append(out, string(r))
}

func argsJSON(a any) string {
	if s, ok := a.(string); ok {
		return s // deliberately raw (possibly invalid) JSON
	}
	b, _ := json.Marshal(a)
	return string(b)
}

func decodeBody(t testing.TB, r *http.Request) map[string]any {
	var body map[string]any
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		t.Errorf("request body is not JSON: %v", err)
	}
	return body
}

func list(v any) []any {
	l, _ := v.([]any)
	return l
}

func obj(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func str(v any) string {
	s, _ := v.(string)
	return s
}
