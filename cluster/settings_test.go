package cluster_test

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/cluster"
	"github.com/xiaozhi-hub/hub/store"
)

type reloads struct{ n atomic.Int32 }

func (r *reloads) Reload(context.Context) error { r.n.Add(1); return nil }

// serveSettings is what the hub does on a node: the live settings and
// personas write through the node's wrapper of its store.
func serveSettings(t *testing.T, m *member) (cluster.SettingsStore, *reloads) {
	t.Helper()
	shared, r := m.node.SettingsStore(m.st), &reloads{}
	if err := m.node.ServeSettings(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	return shared, r
}

func storedVoice(t *testing.T, st *store.Store) string {
	t.Helper()
	list, err := st.LoadSettings(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range list {
		if s.Name == "tts-voice" {
			return s.Value
		}
	}
	return ""
}

func memoryOf(t *testing.T, st *store.Store, device string) string {
	t.Helper()
	m, err := st.Memory(context.Background(), device)
	if err != nil {
		t.Fatal(err)
	}
	return m.Text
}

// A node that joins brings the settings and memories it had; a memory
// cleared on one node is cleared on the others; a node that was away
// while a setting was removed does not bring it back, and gets what was
// set meanwhile.
func TestSettingsAndMemoriesAreShared(t *testing.T) {
	e := startNATS(t)
	ctx := context.Background()
	const dev = "aa:00:00:00:c6:01"
	now := time.Now().UTC()

	dbC := filepath.Join(t.TempDir(), "hub.db")
	st, err := store.Open(ctx, dbC, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.SaveSettings(ctx, []hub.StoredSetting{{Name: "tts-voice", Value: "nova", Updated: now}}, nil); err != nil {
		t.Fatal(err)
	}
	if err := st.SaveMemory(ctx, hub.Memory{Device: dev, Text: "The cat is called Tom.", Updated: now}); err != nil {
		t.Fatal(err)
	}
	st.Close()

	a := join(t, e, "a")
	sharedA, reloadsA := serveSettings(t, a)
	c, leaveC := joinWith(t, e, "c", dbC)
	serveSettings(t, c)
	eventually(t, "c's setting and memory on a", func() bool {
		return storedVoice(t, a.st) == "nova" && memoryOf(t, a.st, dev) == "The cat is called Tom." && reloadsA.n.Load() > 0
	})

	if err := sharedA.SaveMemory(ctx, hub.Memory{Device: dev}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the memory cleared on c", func() bool { return memoryOf(t, c.st, dev) == "" })

	// c away; the voice removed and a persona set on a; c back.
	leaveC()
	if err := sharedA.SaveSettings(ctx, nil, []string{"tts-voice"}); err != nil {
		t.Fatal(err)
	}
	if err := sharedA.SavePersona(ctx, "device", dev, hub.Persona{Name: "Jarvis", Updated: now}); err != nil {
		t.Fatal(err)
	}
	c, _ = joinWith(t, e, "c", dbC)
	if storedVoice(t, c.st) != "nova" {
		t.Fatal("c's store lost its value before the cluster said so")
	}
	sharedC, _ := serveSettings(t, c)
	if v := storedVoice(t, c.st); v != "" {
		t.Fatalf("c, back after the removal, still has tts-voice %q", v)
	}
	if p, err := c.st.Persona(ctx, "device", dev); err != nil || p.Name != "Jarvis" {
		t.Fatalf("c, back, has the persona %+v %v", p, err)
	}
	if err := sharedC.SaveMemory(ctx, hub.Memory{Device: dev, Text: "Later.", Updated: now}); err != nil { // a change after it: once a has it, it has anything c shared before
		t.Fatal(err)
	}
	eventually(t, "c's later memory on a", func() bool { return memoryOf(t, a.st, dev) == "Later." })
	if v := storedVoice(t, a.st); v != "" {
		t.Fatalf("c brought tts-voice %q back to a", v)
	}
}

// A device deleted on one node takes its persona and memory with it on
// every node, and from the shared state: a node that joins later does not
// bring them back.
func TestDeletedDeviceTakesItsPersonaAndMemoryEverywhere(t *testing.T) {
	e := startNATS(t)
	ctx := context.Background()
	const dev = "aa:00:00:00:c6:02"
	now := time.Now().UTC()
	a, b := join(t, e, "a"), join(t, e, "b")
	sharedA, _ := serveSettings(t, a)
	serveSettings(t, b)
	if _, err := a.reg.Register(ctx, dev, hub.DevicePatch{}); err != nil {
		t.Fatal(err)
	}
	if err := sharedA.SavePersona(ctx, "device", dev, hub.Persona{Name: "Jarvis", Updated: now}); err != nil {
		t.Fatal(err)
	}
	if err := sharedA.SaveMemory(ctx, hub.Memory{Device: dev, Text: "My PIN is 1234.", Updated: now}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the device, its persona and memory on b", func() bool {
		p, _ := b.st.Persona(ctx, "device", dev)
		_, err := b.reg.Device(dev)
		return err == nil && p.Name == "Jarvis" && memoryOf(t, b.st, dev) != ""
	})
	if err := b.reg.DeleteDevice(ctx, dev); err != nil {
		t.Fatal(err)
	}
	for _, m := range []*member{a, b} {
		eventually(t, m.node.Name()+" to forget the persona and memory", func() bool {
			p, _ := m.st.Persona(ctx, "device", dev)
			return p == (hub.Persona{}) && memoryOf(t, m.st, dev) == ""
		})
	}
	c := join(t, e, "c")
	serveSettings(t, c)
	if p, _ := c.st.Persona(ctx, "device", dev); p != (hub.Persona{}) || memoryOf(t, c.st, dev) != "" {
		t.Fatalf("a node that joined after the deletion has %+v, %q", p, memoryOf(t, c.st, dev))
	}
}
