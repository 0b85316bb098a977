package agent

import (
	"container/list"
	"slices"
	"sync"
	"time"
)

// sessions keeps conversation history per session id: at most max
// sessions (the least recently used is dropped), each forgotten after ttl
// without use, each holding at most maxMsgs messages. A turn's get costs
// the same with ten sessions or ten thousand: the sessions are in order of
// use, so the expired and the least recently used are at the back.
type sessions struct {
	max, maxMsgs int
	ttl          time.Duration
	now          func() time.Time

	mu  sync.Mutex
	m   map[string]*session
	lru list.List // of *session, the most recently used first
}

type session struct {
	mu       sync.Mutex // held for the length of a run
	owner    *sessions
	id       string
	msgs     []Message     // guarded by owner.mu
	lastUsed time.Time     // guarded by owner.mu
	elem     *list.Element // in owner.lru; guarded by owner.mu
}

func newSessions(max, maxMsgs int, ttl time.Duration, now func() time.Time) *sessions {
	return &sessions{max: max, maxMsgs: maxMsgs, ttl: ttl, now: now, m: map[string]*session{}}
}

// get returns the session, creating it, and forgets expired ones.
func (ss *sessions) get(id string) *session {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	now := ss.now()
	for e := ss.lru.Back(); e != nil && now.Sub(e.Value.(*session).lastUsed) > ss.ttl; e = ss.lru.Back() {
		ss.dropLocked(e)
	}
	s, ok := ss.m[id]
	if !ok {
		if len(ss.m) >= ss.max && ss.lru.Len() > 0 {
			ss.dropLocked(ss.lru.Back())
		}
		s = &session{owner: ss, id: id}
		s.elem = ss.lru.PushFront(s)
		ss.m[id] = s
	}
	s.usedLocked(now)
	return s
}

func (ss *sessions) dropLocked(e *list.Element) {
	delete(ss.m, ss.lru.Remove(e).(*session).id)
}

// usedLocked marks s used at now (a no-op on the order once s is dropped).
func (s *session) usedLocked(now time.Time) {
	s.lastUsed = now
	s.owner.lru.MoveToFront(s.elem)
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
	s.usedLocked(s.owner.now())
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
