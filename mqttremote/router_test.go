package mqttremote

import (
	"net/url"
	"slices"
	"sync"
	"testing"

	"github.com/xiaozhi-hub/hub/protocol"
)

// nodes is a cluster of hub nodes as one node sees it: owners and holders
// by device, and what it passed to whom.
type nodes struct {
	name          string
	owner, holder map[string]string
	mu            sync.Mutex
	passed        []string // node/device: payload
	servePassed   func(id string, p []byte)
}

func (n *nodes) Name() string                    { return n.name }
func (n *nodes) Owner(id string) string          { return n.owner[id] }
func (n *nodes) Holder(id string) string         { return n.holder[id] }
func (n *nodes) OnReleased(func(string, string)) {}
func (n *nodes) OnMembership(func())             {}
func (n *nodes) Pass(node, id string, p []byte) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.passed = append(n.passed, node+"/"+id+": "+string(p))
	return nil
}
func (n *nodes) ServePassed(fn func(string, []byte)) (func(), error) {
	n.servePassed = fn
	return func() {}, nil
}

// sessions are this node's device sessions.
type sessions struct {
	held map[string][]string // device → messages offered
}

func (s *sessions) Connected(id protocol.Identity, remote, local string) {
	s.held[id.DeviceID] = []string{}
}
func (s *sessions) Offer(id string, p []byte) bool {
	if _, ok := s.held[id]; !ok {
		return false
	}
	s.held[id] = append(s.held[id], string(p))
	return true
}
func (s *sessions) Holds(id string) bool           { _, ok := s.held[id]; return ok }
func (s *sessions) Disconnected(id, reason string) { delete(s.held, id) }

// In a cluster sharing the broker, a node serves the devices it owns and
// passes the messages of the others to the node holding them (or, when
// none holds the device yet, to its owner); a message passed to it for a
// device it owns starts the device's session here.
func TestRouterServesOwnDevicesAndPassesTheOthers(t *testing.T) {
	n := &nodes{name: "hub-1",
		owner:  map[string]string{"mine": "hub-1", "theirs": "hub-2", "moved": "hub-1"},
		holder: map[string]string{"moved": "hub-3"}}
	s := &sessions{held: map[string][]string{}}
	r, err := NewRouter(Config{URL: &url.URL{Scheme: "mqtt", Host: "127.0.0.1:1"}}, n)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Serve(s); err != nil {
		t.Fatal(err)
	}
	r.connected(Device{DeviceID: "mine"})
	r.connected(Device{DeviceID: "theirs"})
	if !s.Holds("mine") || s.Holds("theirs") {
		t.Fatalf("sessions after connects: %v, want mine only", s.held)
	}
	r.message("mine", []byte("a"))
	r.message("theirs", []byte("b"))
	r.message("moved", []byte("c")) // owned here, but hub-3 holds it
	if want := []string{"hub-2/theirs: b", "hub-3/moved: c"}; !slices.Equal(n.passed, want) {
		t.Errorf("passed %v, want %v", n.passed, want)
	}
	n.servePassed("later", []byte("d")) // not this node's: dropped
	n.owner["later"] = "hub-1"
	n.servePassed("later", []byte("e"))
	if got := s.held["mine"]; !slices.Equal(got, []string{"a"}) {
		t.Errorf("mine got %v", got)
	}
	if got := s.held["later"]; !slices.Equal(got, []string{"e"}) {
		t.Errorf("a device passed here that this node owns got %v, want its session started with [e]", got)
	}
	if out, in := r.Passed(); out != 2 || in != 2 {
		t.Errorf("passed out %d, in %d; want 2, 2", out, in)
	}
}
