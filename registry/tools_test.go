package registry

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/xiaozhi-hub/hub"
)

func tool(name, schema string) hub.Tool {
	return hub.Tool{Name: name, Description: name, InputSchema: json.RawMessage(schema)}
}

func TestHashIgnoresWhitespaceOnly(t *testing.T) {
	a := []hub.Tool{tool("x", `{"type":"object"}`), tool("y", `{"type":"object"}`)}
	b := []hub.Tool{tool("x", "{ \"type\" : \"object\" }"), tool("y", `{"type":"object"}`)}
	if HashTools(a) != HashTools(b) {
		t.Fatal("formatting must not change the hash")
	}
	if HashTools(a) == HashTools([]hub.Tool{a[1], a[0]}) {
		t.Fatal("order is part of the list")
	}
	if HashTools(a) == HashTools([]hub.Tool{tool("x", `{"type":"object","properties":{}}`), a[1]}) {
		t.Fatal("a schema change must change the hash")
	}
}

func TestDiffTools(t *testing.T) {
	old := []hub.Tool{tool("a", `{}`), tool("b", `{}`), tool("c", `{}`)}
	cur := []hub.Tool{tool("a", `{}`), tool("c", `{"type":"object"}`), tool("d", `{}`)}
	c := diffTools(old, cur)
	if !slices.Equal(c.Added, []string{"d"}) || !slices.Equal(c.Removed, []string{"b"}) || !slices.Equal(c.Changed, []string{"c"}) {
		t.Fatalf("%+v", c)
	}
	if !diffTools(old, old).Empty() {
		t.Fatal("no change expected")
	}
}

func TestFilteredSubscription(t *testing.T) {
	b := newBroker()
	all, stopAll := b.subscribe()
	defer stopAll()
	some, stopSome := b.subscribe(hub.EventOnline)
	defer stopSome()
	// Far more call events than a buffer holds: the filtered subscriber
	// neither sees them nor loses its online event to an overflow.
	for range 3 * subscriberBuffer {
		b.publish(hub.Event{Type: hub.EventCallFinished})
	}
	b.publish(hub.Event{Type: hub.EventOnline, DeviceID: "x"})
	if ev := <-some; ev.Type != hub.EventOnline || ev.DeviceID != "x" {
		t.Fatalf("filtered subscriber got %+v", ev)
	}
	if len(all) != subscriberBuffer {
		t.Fatalf("unfiltered subscriber holds %d events, want a full buffer", len(all))
	}
}

// The hub's Unchecked mark is not the device's: a list read back from the
// store with marks is the same list as the device's without them.
func TestUncheckedMarkIsNotPartOfTheList(t *testing.T) {
	plain := []hub.Tool{tool("a", `{"$ref":"file:///etc/passwd"}`)}
	r := New(nil, Options{})
	defer r.val.Close()
	marked := r.prepare(plain)
	if marked[0].Unchecked == "" || plain[0].Unchecked != "" {
		t.Fatalf("prepare marks a copy: got %+v from %+v", marked, plain)
	}
	if HashTools(marked) != HashTools(plain) || !diffTools(marked, plain).Empty() {
		t.Fatal("the mark changed the list's hash or diff")
	}
}
