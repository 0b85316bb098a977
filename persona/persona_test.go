package persona_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/accounts"
	"github.com/xiaozhi-hub/hub/agent"
	"github.com/xiaozhi-hub/hub/persona"
	"github.com/xiaozhi-hub/hub/registry"
	"github.com/xiaozhi-hub/hub/registry/registrytest"
)

// model stands in for the configured model writing memories: it keeps
// the last line the person said, after the old memory.
type model struct {
	mu       sync.Mutex
	requests []agent.Request
	done     chan string
	asked    chan struct{} // if set, told of each request, which then waits for gate
	gate     chan struct{}
}

func (m *model) Name() string { return "openai" }

func (m *model) Chat(_ context.Context, req agent.Request, _ func(string)) (agent.Response, error) {
	m.mu.Lock()
	m.requests = append(m.requests, req)
	m.mu.Unlock()
	if m.asked != nil {
		m.asked <- struct{}{}
		<-m.gate
	}
	in := req.Messages[0].Text
	old, _, _ := strings.Cut(strings.TrimPrefix(in, "Old memory:\n"), "\n\nConversation:")
	if old == "(none)" {
		old = ""
	}
	var said string
	for _, line := range strings.Split(in, "\n") {
		if s, ok := strings.CutPrefix(line, "Person: "); ok {
			said = s
		}
	}
	return agent.Response{Text: strings.TrimSpace(old + " " + said)}, nil
}

type world struct {
	svc              *persona.Service
	reg              *registry.Registry
	acc              *accounts.Service
	homeA, homeB     string
	alice, bob, gina *hub.Principal // owner, member, guest of A
	carol            *hub.Principal // owner of B
	m                *model
}

const devA, devB, devNone = "aa:00:00:00:9a:01", "aa:00:00:00:9b:01", "aa:00:00:00:90:01"

func newWorld(t *testing.T, maxMemory int) *world {
	t.Helper()
	ctx := context.Background()
	rh := registrytest.New(t, registry.Options{})
	acc := accounts.New(rh.DB, accounts.Options{})
	if err := acc.Load(ctx); err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"alice", "bob", "gina", "carol"} {
		if _, err := acc.AddUser(ctx, u, "password-"+u); err != nil {
			t.Fatal(err)
		}
	}
	pr := func(u string) *hub.Principal { p, _ := acc.Principal(u); return p }
	a, err := acc.CreateHome(ctx, pr("alice"), "A")
	if err != nil {
		t.Fatal(err)
	}
	b, err := acc.CreateHome(ctx, pr("carol"), "B")
	if err != nil {
		t.Fatal(err)
	}
	for u, r := range map[string]hub.Role{"bob": hub.RoleMember, "gina": hub.RoleGuest} {
		if err := acc.SetMember(ctx, pr("alice"), a.ID, u, r); err != nil {
			t.Fatal(err)
		}
	}
	for id, home := range map[string]string{devA: a.ID, devB: b.ID, devNone: ""} {
		if _, err := rh.Reg.Register(ctx, id, hub.DevicePatch{Home: &home}); err != nil {
			t.Fatal(err)
		}
	}
	m := &model{}
	w := &world{reg: rh.Reg, acc: acc, homeA: a.ID, homeB: b.ID, m: m,
		alice: pr("alice"), bob: pr("bob"), gina: pr("gina"), carol: pr("carol")}
	w.svc = persona.New(persona.Options{Store: rh.DB, Devices: rh.Reg, Homes: acc, Model: m, MaxMemory: maxMemory,
		OnMemory: func(mem hub.Memory) {
			if m.done != nil {
				m.done <- mem.Text
			}
		}})
	t.Cleanup(w.svc.Close)
	return w
}

// Who reaches a device's persona and memory: the admin, its home's owner
// and member; a guest is refused; a person of another home, or of none,
// gets exactly the unknown device's answer.
func TestPersonaRights(t *testing.T) {
	w := newWorld(t, 0)
	ctx := context.Background()
	_, unknown := w.svc.DevicePersona(ctx, w.alice, "aa:00:00:00:99:99")
	for _, c := range []struct {
		who  *hub.Principal
		id   string
		code string // "" for allowed
	}{
		{hub.Admin, devA, ""}, {w.alice, devA, ""}, {w.bob, devA, ""}, {w.gina, devA, hub.EFORBIDDEN},
		{w.carol, devA, hub.ENOTFOUND}, {w.alice, devB, hub.ENOTFOUND}, {w.alice, devNone, hub.ENOTFOUND}, {hub.Admin, devNone, ""},
	} {
		checks := map[string]error{}
		_, checks["GET persona"] = w.svc.DevicePersona(ctx, c.who, c.id)
		_, checks["PUT persona"] = w.svc.SetDevicePersona(ctx, c.who, c.id, hub.Persona{Name: "X"})
		_, checks["GET memory"] = w.svc.Memory(ctx, c.who, c.id)
		checks["DELETE memory"] = w.svc.ClearMemory(ctx, c.who, c.id)
		for what, err := range checks {
			if hub.ErrorCode(err) != c.code && !(c.code == "" && err == nil) {
				t.Errorf("%s %s of %s: %v, want %q", c.who.Actor(), what, c.id, err, c.code)
			}
			if c.code == hub.ENOTFOUND && strings.ReplaceAll(hub.ErrorMessage(err), c.id, "ID") != strings.ReplaceAll(hub.ErrorMessage(unknown), "aa:00:00:00:99:99", "ID") {
				t.Errorf("%s %s of a foreign device: %q differs from an unknown one's %q", c.who.Actor(), what, hub.ErrorMessage(err), hub.ErrorMessage(unknown))
			}
		}
	}
	for _, c := range []struct {
		who  *hub.Principal
		code string
	}{{hub.Admin, ""}, {w.alice, ""}, {w.bob, ""}, {w.gina, hub.EFORBIDDEN}, {w.carol, hub.ENOTFOUND}} {
		_, err1 := w.svc.HomePersona(ctx, c.who, w.homeA)
		_, err2 := w.svc.SetHomePersona(ctx, c.who, w.homeA, hub.Persona{Name: "Home"})
		for _, err := range []error{err1, err2} {
			if hub.ErrorCode(err) != c.code && !(c.code == "" && err == nil) {
				t.Errorf("%s on home A's persona: %v, want %q", c.who.Actor(), err, c.code)
			}
		}
	}
	if _, err := w.svc.HomePersona(ctx, hub.Admin, "no-such-home"); hub.ErrorCode(err) != hub.ENOTFOUND {
		t.Errorf("the admin on an unknown home: %v", err)
	}
}

// A device's persona: its own fields, else its home's, else the defaults
// in its language; bounds are the settings' words.
func TestPersonaInheritance(t *testing.T) {
	w := newWorld(t, 0)
	ctx := context.Background()
	if _, err := w.svc.SetHomePersona(ctx, w.alice, w.homeA, hub.Persona{Name: "Home name", Voice: "nova", Language: "en"}); err != nil {
		t.Fatal(err)
	}
	v, err := w.svc.SetDevicePersona(ctx, w.bob, devA, hub.Persona{Greeting: "Yo"})
	if err != nil {
		t.Fatal(err)
	}
	if e := v.Effective; e.Name != "Home name" || e.Voice != "nova" || e.Greeting != "Yo" || e.Role != persona.Default("en").Role || v.Home == nil || v.Home.Name != "Home name" {
		t.Fatalf("effective persona: %+v (home %+v)", e, v.Home)
	}
	if p := w.svc.Effective(ctx, devB, w.homeB, ""); p != persona.Default("zh") {
		t.Fatalf("a device with nothing set: %+v", p)
	}
	if p := w.svc.Effective(ctx, devB, w.homeB, "en-US"); p.Name != "Xiaozhi" {
		t.Fatalf("an English device with nothing set: %+v", p)
	}
	for _, bad := range []hub.Persona{{Name: strings.Repeat("名", 65)}, {Role: strings.Repeat("x", 4001)}, {Voice: "\xff"}} {
		if _, err := w.svc.SetDevicePersona(ctx, w.alice, devA, bad); hub.ErrorCode(err) != hub.EINVALID {
			t.Errorf("persona %+v: %v", bad, err)
		}
	}
	prompt, _ := w.svc.Prompt(ctx, devA, w.homeA, "")
	if !strings.HasPrefix(prompt, "Your name is Home name. "+persona.Default("en").Role) {
		t.Fatalf("prompt: %q", prompt)
	}
}

// After a conversation the model writes the memory from the old one and
// what was said; it is bounded, in the next prompt, and cleared on demand.
func TestMemoryWrittenAfterEachConversation(t *testing.T) {
	w := newWorld(t, 40)
	w.m.done = make(chan string, 1)
	ctx := context.Background()
	w.svc.Heard(devA, "My cat is Tom.", "Nice.")
	w.svc.Ended(devA)
	if got := <-w.m.done; got != "My cat is Tom." {
		t.Fatalf("first memory %q", got)
	}
	w.svc.Heard(devA, "I live in Paris and I like long walks by the river.", "Lovely.")
	w.svc.Ended(devA)
	got := <-w.m.done
	if got != "My cat is Tom. I live in Paris and I lik" { // 40 characters
		t.Fatalf("second memory %q", got)
	}
	if req := w.m.requests[1]; !strings.Contains(req.System, "at most 40 characters") || !strings.HasPrefix(req.Messages[0].Text, "Old memory:\nMy cat is Tom.\n") {
		t.Fatalf("the model was asked %q / %q", req.System, req.Messages[0].Text)
	}
	if prompt, _ := w.svc.Prompt(ctx, devA, w.homeA, ""); !strings.Contains(prompt, "earlier conversations at this device:\n"+got) {
		t.Fatalf("prompt without the memory: %q", prompt)
	}
	if m, err := w.svc.Memory(ctx, w.bob, devA); err != nil || m.Text != got || m.Updated.IsZero() {
		t.Fatalf("memory as bob: %+v %v", m, err)
	}
	// A conversation in which nothing was answered writes nothing.
	w.svc.Ended(devA)
	if err := w.svc.ClearMemory(ctx, w.alice, devA); err != nil {
		t.Fatal(err)
	}
	if m, _ := w.svc.Memory(ctx, w.alice, devA); m.Text != "" {
		t.Fatalf("after clearing: %+v", m)
	}
	if len(w.m.requests) != 2 {
		t.Fatalf("%d requests to the model, want 2", len(w.m.requests))
	}
}

// A memory being written when a person clears it is not stored: the
// next one starts from nothing.
func TestClearWhileWriting(t *testing.T) {
	w := newWorld(t, 0)
	w.m.asked, w.m.gate, w.m.done = make(chan struct{}, 2), make(chan struct{}), make(chan string, 2)
	ctx := context.Background()
	w.svc.Heard(devA, "My cat is Tom.", "Nice.")
	w.svc.Ended(devA)
	<-w.m.asked
	if err := w.svc.ClearMemory(ctx, w.alice, devA); err != nil {
		t.Fatal(err)
	}
	w.svc.Heard(devA, "Second.", "OK.")
	w.svc.Ended(devA)
	close(w.m.gate)
	if got := <-w.m.done; got != "Second." {
		t.Fatalf("the memory after clearing is %q", got)
	}
}

// A deleted device takes its persona and memory with it: the same id
// registered again (the device reset and given to someone else) starts
// with neither, and a memory being written when it was deleted is not
// stored.
func TestDeletedDeviceForgetsItsPersonaAndMemory(t *testing.T) {
	w := newWorld(t, 0)
	w.m.done = make(chan string, 1)
	ctx := context.Background()
	if _, err := w.svc.SetDevicePersona(ctx, w.alice, devA, hub.Persona{Name: "Jarvis"}); err != nil {
		t.Fatal(err)
	}
	w.svc.Heard(devA, "My PIN is 1234.", "Noted.")
	w.svc.Ended(devA)
	if got := <-w.m.done; got != "My PIN is 1234." {
		t.Fatalf("memory %q", got)
	}
	if prompt, p := w.svc.Prompt(ctx, devA, w.homeA, ""); p.Name != "Jarvis" || !strings.Contains(prompt, "1234") {
		t.Fatalf("before the deletion: %+v, %q", p, prompt)
	}

	w.m.asked, w.m.gate = make(chan struct{}, 2), make(chan struct{})
	w.svc.Heard(devA, "And my dog is Rex.", "Nice.")
	w.svc.Ended(devA)
	<-w.m.asked // the memory is being written
	if err := w.reg.DeleteDevice(ctx, devA); err != nil {
		t.Fatal(err)
	}
	home := w.homeB
	if _, err := w.reg.Register(ctx, devA, hub.DevicePatch{Home: &home}); err != nil {
		t.Fatal(err)
	}
	if m, err := w.svc.Memory(ctx, w.carol, devA); err != nil || m.Text != "" {
		t.Fatalf("the device registered again remembers %+v, %v", m, err)
	}
	if v, err := w.svc.DevicePersona(ctx, w.carol, devA); err != nil || v.Own.Name != "" {
		t.Fatalf("the device registered again has the persona %+v, %v", v.Own, err)
	}
	// The new owner's first conversation, ended while the old one's memory
	// is still being written, starts a memory of its own.
	w.svc.Heard(devA, "Hello.", "Hi.")
	w.svc.Ended(devA)
	close(w.m.gate)
	if got := <-w.m.done; got != "Hello." {
		t.Fatalf("the new owner's memory is %q", got)
	}
	if prompt, _ := w.svc.Prompt(ctx, devA, w.homeB, ""); strings.Contains(prompt, "1234") || strings.Contains(prompt, "Rex") {
		t.Fatalf("the new owner's prompt holds the old one's memory: %q", prompt)
	}
}
