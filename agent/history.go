package agent

import (
	"slices"
	"sync"
	"time"
)

// sessions keeps conversation history per session id: at most max
// sessions (the least recently used is dropped), each forgotten after ttl
// without use, each holding at most maxMsgs messages.
type sessions struct {
	max, maxMsgs int
	ttl          time.Duration
	now          func() time.Time

	mu sync.Mutex
	m  map[string]*session
}

type session struct {
	mu       sync.Mutex // held for the length of a run
	owner    *sessions
	msgs     []Message // guarded by owner.mu
	lastUsed time.Time // guarded by owner.mu
}

func newSessions(max, maxMsgs int, ttl time.Duration, now func() time.Time) *sessions {
	return &sessions{max: max, maxMsgs: maxMsgs, ttl: ttl, now: now, m: map[string]*session{}}
}

// get returns the session, creating it, and forgets expired ones.
func (ss *sessions) get(id string) *session {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	now := ss.now()
	for k, s := range ss.m {
		if now.Sub(s.lastUsed) > ss.ttl {
			delete(ss.m, k)
		}
	}
	s, ok := ss.m[id]
	if !ok {
		if len(ss.m) >= ss.max {
			var oldest string
			for k, o := range ss.m {
				if oldest == "" || o.lastUsed.Before(ss.m[oldest].lastUsed) {
					oldest = k
				}
			}
			delete(ss.m, oldest)
		}
		s = &session{owner: ss}
		ss.m[id] = s
	}
	s.lastUsed = now
	return s
}

func (s *session) history() []Message {
	s.owner.mu.Lock()
	defer s.owner.mu.Unlock()
	return slices.Clone(s.msgs)
}

// replace makes msgs the conversation, as save does, without marking the
// session used (a copy read from the shared history).
func (s *session) replace(msgs []Message) {
	msgs = consistent(msgs)
	s.owner.mu.Lock()
	defer s.owner.mu.Unlock()
	s.msgs = trim(msgs, s.owner.maxMsgs)
}

// save keeps the conversation, trimmed to the newest messages that still
// form a valid conversation: it starts with a user message that is not a
// tool result, and every tool call has its result.
func (s *session) save(msgs []Message) {
	msgs = consistent(msgs)
	s.owner.mu.Lock()
	defer s.owner.mu.Unlock()
	s.msgs = trim(msgs, s.owner.maxMsgs)
	s.lastUsed = s.owner.now()
}

// consistent drops a trailing assistant turn whose tool calls have no
// results (a run that ended in the middle of a step).
func consistent(msgs []Message) []Message {
	if n := len(msgs); n > 0 && msgs[n-1].Role == RoleAssistant && len(msgs[n-1].ToolCalls) > 0 {
		return msgs[:n-1]
	}
	return msgs
}

// trim keeps at most max messages, cutting only before a user text message
// so that no tool result loses its call.
func trim(msgs []Message, max int) []Message {
	if len(msgs) <= max {
		return msgs
	}
	for i := len(msgs) - max; i < len(msgs); i++ {
		if msgs[i].Role == RoleUser && len(msgs[i].Results) == 0 {
			return slices.Clone(msgs[i:])
		}
	}
	return nil // one turn longer than max: start afresh
}
