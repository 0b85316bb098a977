package persona

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/agent"
)

// DefaultMaxMemory bounds a device's memory, in characters.
const DefaultMaxMemory = 1000

// Bounds of what a conversation hands to the model that writes the memory.
const (
	maxExchanges    = 20   // the last ones of a conversation
	maxExchangeText = 1000 // characters of what was heard, and of the answer
	writeTimeout    = 60 * time.Second
	writers         = 2 // memories written at once, hub-wide
)

// talk is what was said in a device's conversation, and what waits to be
// written into its memory.
type talk struct {
	now     []exchange // the conversation going on
	pending []exchange // ended conversations not yet in the memory
	writing bool       // a goroutine writes the pending ones
	cleared uint64     // times a person cleared the memory
}

type exchange struct{ heard, answer string }

// Heard notes one exchange of the conversation going on at a device.
func (s *Service) Heard(deviceID, heard, answer string) {
	if heard == "" || answer == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.talks[deviceID]
	if t == nil {
		t = &talk{}
		s.talks[deviceID] = t
	}
	t.now = lastOf(append(t.now, exchange{cut(heard, maxExchangeText), cut(answer, maxExchangeText)}))
}

// Ended says a device's conversation ended: when anything was said, the
// model writes the device's new memory, in the background (one writer per
// device; conversations that end meanwhile are written together next).
func (s *Service) Ended(deviceID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.talks[deviceID]
	if t == nil {
		return
	}
	if s.opts.Model == nil || s.ctx.Err() != nil {
		delete(s.talks, deviceID)
		return
	}
	if len(t.now) == 0 {
		return
	}
	t.pending, t.now = lastOf(append(t.pending, t.now...)), nil
	if t.writing {
		return
	}
	t.writing = true
	s.wg.Add(1)
	go s.write(deviceID, t)
}

// write writes the pending conversations of a device into its memory
// until none are left.
func (s *Service) write(deviceID string, t *talk) {
	defer s.wg.Done()
	for {
		s.mu.Lock()
		batch, cleared := t.pending, t.cleared
		t.pending = nil
		if len(batch) == 0 || s.ctx.Err() != nil {
			t.writing = false
			if len(t.now) == 0 {
				delete(s.talks, deviceID)
			}
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
		select {
		case s.sem <- struct{}{}:
		case <-s.ctx.Done():
			continue
		}
		if err := s.remember(s.ctx, deviceID, batch, func() bool { return t.cleared == cleared }); err != nil && s.ctx.Err() == nil {
			s.opts.Logger.Warn("memory: the model could not write the device's memory", "device", deviceID, "err", err)
		}
		<-s.sem
	}
}

// remember asks the model for the device's new memory from the old one
// and a conversation, and stores it.
func (s *Service) remember(ctx context.Context, deviceID string, said []exchange, uncleared func() bool) error {
	ctx, cancel := context.WithTimeout(ctx, writeTimeout)
	defer cancel()
	old, err := s.opts.Store.Memory(ctx, deviceID)
	if err != nil {
		return err
	}
	var b strings.Builder
	b.WriteString("Old memory:\n")
	if old.Text == "" {
		b.WriteString("(none)\n")
	} else {
		b.WriteString(old.Text + "\n")
	}
	b.WriteString("\nConversation:\n")
	for _, e := range said {
		fmt.Fprintf(&b, "Person: %s\nAssistant: %s\n", e.heard, e.answer)
	}
	// Written as the device's voice, so that the model is its home's.
	d, derr := s.opts.Devices.DeviceAs(hub.Admin, deviceID)
	if derr == nil {
		ctx = hub.WithPrincipal(ctx, hub.DevicePrincipal(deviceID, d.Home))
	}
	resp, err := s.opts.Model.Chat(ctx, agent.Request{
		System: fmt.Sprintf(MemoryPrompt, s.opts.MaxMemory), MaxTokens: 800,
		Messages: []agent.Message{{Role: agent.RoleUser, Text: b.String()}},
	}, nil)
	if err != nil {
		return err
	}
	m := hub.Memory{Device: deviceID, Text: cut(strings.TrimSpace(resp.Text), s.opts.MaxMemory), Updated: s.opts.Now().UTC()}
	// A person who cleared the memory meanwhile does not get it back. Nor
	// does a device deleted meanwhile (its memory went with it), even if
	// registered again since, or one moved to another home: the people
	// there were not in the conversation.
	s.mu.Lock()
	defer s.mu.Unlock()
	if !uncleared() {
		return nil
	}
	if now, err := s.opts.Devices.DeviceAs(hub.Admin, deviceID); derr == nil &&
		(err != nil || !now.FirstSeen.Equal(d.FirstSeen) || now.Home != d.Home) {
		return nil
	}
	if err := s.opts.Store.SaveMemory(ctx, m); err != nil {
		return err
	}
	if s.opts.OnMemory != nil {
		s.opts.OnMemory(m)
	}
	return nil
}

// MemoryPrompt is the system prompt of the request that writes a memory
// (%d: its bound in characters).
const MemoryPrompt = `You keep the memory of a voice assistant at one device: what it should know in its next conversations with the people there (their names, preferences, facts they told it, things they asked it to remember). ` +
	`Write the new memory from the old memory and the conversation the user message holds: short plain sentences, at most %d characters, in the language the people spoke; keep what still holds from the old memory; leave out greetings, commands already carried out and small talk. ` +
	`Write only the memory. If nothing is worth keeping, write the old memory unchanged, or nothing when there is none.`

// Prompt is what the model is told before the agent's own prompt at a
// turn on a device: who it is there (the effective persona) and what it
// remembers of the device's earlier conversations.
func (s *Service) Prompt(ctx context.Context, deviceID, home, language string) (string, hub.Persona) {
	p := s.Effective(ctx, deviceID, home, language)
	var b strings.Builder
	fmt.Fprintf(&b, "Your name is %s. %s\n", p.Name, p.Role)
	if p.Language != "" {
		fmt.Fprintf(&b, "Speak the language %q unless the person speaks another.\n", p.Language)
	}
	if p.Greeting != "" {
		fmt.Fprintf(&b, "When someone greets you or wakes you, answer with your greeting: %q\n", p.Greeting)
	}
	m, err := s.opts.Store.Memory(ctx, deviceID)
	if err != nil {
		s.opts.Logger.Warn("memory: could not read the device's", "device", deviceID, "err", err)
	}
	if m.Text != "" {
		fmt.Fprintf(&b, "What you remember from earlier conversations at this device:\n%s\n", m.Text)
	}
	return b.String(), p
}

// Memory is what the assistant remembers of a device's conversations.
func (s *Service) Memory(ctx context.Context, p *hub.Principal, id string) (hub.Memory, error) {
	d, err := s.device(p, id, "read the assistant's memory")
	if err != nil {
		return hub.Memory{}, err
	}
	return s.opts.Store.Memory(ctx, d.ID)
}

// ClearMemory forgets what the assistant remembers of a device's
// conversations, including the one going on.
func (s *Service) ClearMemory(ctx context.Context, p *hub.Principal, id string) error {
	d, err := s.device(p, id, "clear the assistant's memory")
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if t := s.talks[d.ID]; t != nil {
		t.now, t.pending = nil, nil
		t.cleared++ // a memory being written is not stored
	}
	return s.opts.Store.SaveMemory(ctx, hub.Memory{Device: d.ID})
}

// lastOf keeps the last maxExchanges exchanges.
func lastOf(es []exchange) []exchange {
	if len(es) > maxExchanges {
		es = append([]exchange(nil), es[len(es)-maxExchanges:]...)
	}
	return es
}

// cut returns s cut to at most n characters.
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n])
}
