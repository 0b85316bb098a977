package cluster_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/accounts"
	"github.com/xiaozhi-hub/hub/cluster"
	"github.com/xiaozhi-hub/hub/registry"
	"github.com/xiaozhi-hub/hub/store"
)

// member is one hub's registry and cluster membership, without the rest
// of a hub.
type member struct {
	node   *cluster.Node
	reg    *registry.Registry
	people *accounts.Service
	st     *store.Store // the node's own store
}

func startNATS(t *testing.T) *cluster.Embedded {
	t.Helper()
	e, err := cluster.StartEmbedded(cluster.EmbeddedOptions{Name: "nats", StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Shutdown)
	return e
}

func join(t *testing.T, e *cluster.Embedded, name string) *member {
	t.Helper()
	m, _ := joinWith(t, e, name, filepath.Join(t.TempDir(), "hub.db"))
	return m
}

// joinWith is join on the store at db; leave ends the membership before
// the test's end (it is also called at cleanup).
func joinWith(t *testing.T, e *cluster.Embedded, name, db string) (m *member, leave func()) {
	t.Helper()
	return joinOpts(t, e, cluster.Options{Name: name}, db)
}

// joinOpts is joinWith with the node's options.
func joinOpts(t *testing.T, e *cluster.Embedded, o cluster.Options, db string) (m *member, leave func()) {
	t.Helper()
	ctx := context.Background()
	nc, err := e.Connect(o.Name)
	if err != nil {
		t.Fatal(err)
	}
	node, err := cluster.Open(ctx, nc, o)
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(ctx, db, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	people := accounts.New(node.AccountsStore(st), accounts.Options{})
	if err := people.Load(ctx); err != nil {
		t.Fatal(err)
	}
	node.ServeAccounts(people)
	reg := registry.New(node.Store(st), registry.Options{Presence: node.Presence})
	if err := reg.Load(ctx); err != nil {
		t.Fatal(err)
	}
	if err := node.Start(ctx, reg); err != nil {
		t.Fatal(err)
	}
	leave = sync.OnceFunc(func() {
		reg.Close()
		node.Close()
		nc.Close()
		st.Close()
	})
	t.Cleanup(leave)
	return &member{node: node, reg: reg, people: people, st: st}, leave
}

// freeAddr is a loopback address nothing listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 10 s for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Two nodes change different fields of one device at the same time, over
// and over (one moves it to a home and a room, the other renames it):
// every change survives on both (the shared record is merged
// field by field, not overwritten by the last writer).
func TestConcurrentChangesOnTwoNodesAreMerged(t *testing.T) {
	e := startNATS(t)
	a, b := join(t, e, "a"), join(t, e, "b")
	ctx := context.Background()
	const id = "aa:00:00:00:0d:01"
	if _, err := a.reg.Register(ctx, id, hub.DevicePatch{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the device on b", func() bool { _, err := b.reg.Device(id); return err == nil })

	const rounds = 20
	for i := range rounds {
		name, room, home := fmt.Sprintf("lamp %d", i), fmt.Sprintf("room %d", i), fmt.Sprintf("home%d", i)
		var wg sync.WaitGroup
		wg.Add(2)
		go func() {
			defer wg.Done()
			if _, err := a.reg.UpdateDevice(ctx, id, hub.DevicePatch{Room: &room, Home: &home}); err != nil {
				t.Error(err)
			}
		}()
		go func() {
			defer wg.Done()
			if _, err := b.reg.UpdateDevice(ctx, id, hub.DevicePatch{Name: &name}); err != nil {
				t.Error(err)
			}
		}()
		wg.Wait()
	}
	want := fmt.Sprintf("lamp %d / room %d / home%d", rounds-1, rounds-1, rounds-1)
	for _, m := range []*member{a, b} {
		d, _ := m.reg.Device(id)
		eventually(t, m.node.Name()+" to hold both last changes (it has "+d.Name+" / "+d.Room+" / "+d.Home+")", func() bool {
			d, _ := m.reg.Device(id)
			return d.Name+" / "+d.Room+" / "+d.Home == want
		})
	}
}

// A device deleted on one node is deleted on the others, with its tools.
func TestDeletionReachesEveryNode(t *testing.T) {
	e := startNATS(t)
	a, b := join(t, e, "a"), join(t, e, "b")
	ctx := context.Background()
	const id = "aa:00:00:00:0d:02"
	name := "desk lamp"
	if _, err := a.reg.Register(ctx, id, hub.DevicePatch{Name: &name}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the device on b", func() bool { d, err := b.reg.Device(id); return err == nil && d.Name == name })
	if err := b.reg.DeleteDevice(ctx, id); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the deletion on a", func() bool { _, err := a.reg.Device(id); return err != nil })

	// A node that joins later gets the state as it is: no deleted device.
	c := join(t, e, "c")
	if _, err := c.reg.Device(id); err == nil {
		t.Fatal("a node that joined after the deletion knows the deleted device")
	}
}

// A hub that joins a cluster with devices of its own brings them into the
// shared state; one that joins empty gets the cluster's devices.
func TestJoiningShares(t *testing.T) {
	e := startNATS(t)
	a := join(t, e, "a")
	ctx := context.Background()
	name := "kitchen speaker"
	if _, err := a.reg.Register(ctx, "aa:00:00:00:0d:03", hub.DevicePatch{Name: &name}); err != nil {
		t.Fatal(err)
	}
	b := join(t, e, "b")
	if d, err := b.reg.Device("aa:00:00:00:0d:03"); err != nil || d.Name != name {
		t.Fatalf("a node that joined later has %+v, %v; want the device at once", d, err)
	}
}

// Only nodes that present the cluster's secret join its routes.
func TestRoutesNeedTheSecret(t *testing.T) {
	addrA, addrB := freeAddr(t), freeAddr(t)
	const secret = "the-right-secret-0123"
	nodes := make([]*cluster.Embedded, 3)
	logs := make([]*logLines, 3)
	var wg sync.WaitGroup
	for i, o := range []cluster.EmbeddedOptions{
		{Name: "a", Listen: addrA, Secret: secret, Peers: []string{"nats://" + addrB}},
		{Name: "b", Listen: addrB, Secret: secret, Peers: []string{"nats://" + addrA}},
		{Name: "intruder", Listen: "127.0.0.1:0", Secret: "a-wrong-secret-456789", Peers: []string{"nats://" + addrA, "nats://" + addrB}},
	} {
		o.StoreDir = t.TempDir()
		logs[i] = &logLines{}
		o.Logger = slog.New(logs[i])
		wg.Add(1)
		go func() {
			defer wg.Done()
			e, err := cluster.StartEmbedded(o)
			if err != nil {
				t.Error(err)
				return
			}
			nodes[i] = e
			t.Cleanup(e.Shutdown)
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	eventually(t, "a and b joined", func() bool { return nodes[0].Routes() >= 1 })
	for i, name := range []string{"a", "b"} { // the intruder tried both, twice (it retries), and each refused it
		eventually(t, name+" refusing the intruder twice", func() bool { return logs[i].count("Router connection closed: Authentication Failure") >= 2 })
	}
	// Each refused it, and counts only the other as a route. (The
	// intruder's own count is no witness: it counts a route from the
	// moment a node's INFO reaches it, before that node reads its
	// credentials and closes the connection, and it tries again every
	// second; it was seen at 1.)
	for i, name := range []string{"a", "b"} {
		if r := nodes[i].Routes(); r != 1 {
			t.Fatalf("%s has %d routes; want 1 (the other node's)", name, r)
		}
	}
	if _, err := cluster.StartEmbedded(cluster.EmbeddedOptions{Name: "c", StoreDir: t.TempDir(), Listen: "127.0.0.1:0"}); err == nil {
		t.Fatal("a node with routes started without a secret")
	}
}

// A node that stops running (a hung process: no heartbeats, its lease
// still there) is taken for dead on its silence, before its lease lapses.
func TestSilentNodeIsTakenForDeadBeforeItsLeaseLapses(t *testing.T) {
	e := startNATS(t)
	a, b := join(t, e, "hub-a"), join(t, e, "hub-b")
	eventually(t, "hub-a to see hub-b", func() bool { return a.node.Nodes() == 2 })
	b.node.Abandon()
	nc, err := e.Connect("test")
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	leases, err := js.KeyValue(context.Background(), "xzhub_nodes")
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for a.node.Nodes() != 1 {
		if time.Now().After(deadline) {
			t.Fatal("hub-a still counts the silent hub-b after 30 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := leases.Get(context.Background(), "aHViLWI"); err != nil { // base64url("hub-b")
		t.Fatalf("hub-b's lease was gone when hub-a dropped it (%v): the silence was not what counted", err)
	}
}

// A node whose Start failed (here: its context already ended) closes
// without waiting for loops that never began.
func TestCloseAfterAFailedStart(t *testing.T) {
	e := startNATS(t)
	nc, err := e.Connect("failing")
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	node, err := cluster.Open(context.Background(), nc, cluster.Options{Name: "failing"})
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "hub.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	reg := registry.New(node.Store(st), registry.Options{Presence: node.Presence})
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	if err := node.Start(ended, reg); err == nil {
		t.Fatal("Start with an ended context succeeded")
	}
	closed := make(chan struct{})
	go func() { node.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(20 * time.Second):
		t.Fatal("Close after a failed Start did not return")
	}
}

// A node that is given the history again (it crashed before acknowledging
// what it had copied; here its consumer is deleted, so the whole stream
// comes again) keeps each of the other nodes' events once.
func TestHistoryDeliveredAgainIsCopiedOnce(t *testing.T) {
	e := startNATS(t)
	a := join(t, e, "a")
	db := filepath.Join(t.TempDir(), "b.db")
	b, leave := joinWith(t, e, "b", db)
	ctx := context.Background()
	const id = "aa:00:00:00:0d:05"
	if _, err := a.reg.Register(ctx, id, hub.DevicePatch{}); err != nil {
		t.Fatal(err)
	}
	rename := func(name string) {
		t.Helper()
		if _, err := a.reg.UpdateDevice(ctx, id, hub.DevicePatch{Name: &name}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 5 {
		rename(fmt.Sprintf("lamp %d", i))
	}
	fromA := func(m *member) (n int, last string) {
		es, err := m.reg.Events(ctx, id, 100)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range es {
			if ev.Node == "a" {
				n++
				var d struct{ Name string }
				if raw, ok := ev.Data.(json.RawMessage); ok && last == "" && json.Unmarshal(raw, &d) == nil {
					last = d.Name
				}
			}
		}
		return n, last
	}
	var before int
	eventually(t, "a's events copied to b", func() bool {
		var last string
		before, last = fromA(b)
		return last == "lamp 4"
	})
	leave()

	nc, err := e.Connect("test")
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	st, err := js.Stream(ctx, "xzhub_history")
	if err != nil {
		t.Fatal(err)
	}
	deleted := 0
	for c := range st.ListConsumers(ctx).Info() {
		if c.Config.Description == "xiaozhi-hub node b copying the history" {
			if err := st.DeleteConsumer(ctx, c.Name); err != nil {
				t.Fatal(err)
			}
			deleted++
		}
	}
	if deleted != 1 {
		t.Fatalf("deleted %d consumers of b, want 1", deleted)
	}

	b, _ = joinWith(t, e, "b", db)
	rename("lamp 5") // after everything b is given again
	eventually(t, "the new event on b", func() bool { _, last := fromA(b); return last == "lamp 5" })
	if after, _ := fromA(b); after != before+1 {
		t.Fatalf("b lists %d of a's events, had %d before the history came again: want %d", after, before, before+1)
	}
}

// NATS clients log in, on loopback too: without the secret a local user
// cannot read the shared state (the device-token secret) or call devices
// on their subjects.
func TestNATSClientsNeedTheSecret(t *testing.T) {
	const secret = "the-client-secret-0123"
	for _, o := range []cluster.EmbeddedOptions{
		{Name: "monitored", ClientListen: freeAddr(t), Secret: secret},
		// A clustered node's own client port, on loopback for NATS's sake.
		{Name: "routed", Listen: freeAddr(t), Secret: secret, Peers: []string{"nats://" + freeAddr(t)}},
	} {
		o.StoreDir = t.TempDir()
		e, err := cluster.StartEmbedded(o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(e.Shutdown)
		url := e.ClientURL()
		if url == "" {
			t.Fatalf("%s serves no client port", o.Name)
		}
		if nc, err := nats.Connect(url, nats.NoReconnect()); err == nil {
			nc.Close()
			t.Fatalf("%s: a client without credentials connected to %s", o.Name, url)
		} else if !errors.Is(err, nats.ErrAuthorization) {
			t.Errorf("%s: connecting without credentials: %v; want an authorization error", o.Name, err)
		}
		if nc, err := nats.Connect(url, nats.UserInfo("xiaozhi-hub", "not-the-secret-000000"), nats.NoReconnect()); err == nil {
			nc.Close()
			t.Fatalf("%s: a client with a wrong password connected", o.Name)
		}
		nc, err := nats.Connect(url, nats.UserInfo("xiaozhi-hub", secret), nats.NoReconnect())
		if err != nil {
			t.Fatalf("%s: the nats CLI with the secret: %v", o.Name, err)
		}
		nc.Close()
		in, err := e.Connect("hub")
		if err != nil {
			t.Fatalf("%s: the hub's own connection: %v", o.Name, err)
		}
		in.Close()
	}
	if _, err := cluster.StartEmbedded(cluster.EmbeddedOptions{Name: "open", StoreDir: t.TempDir(), ClientListen: freeAddr(t)}); err == nil ||
		!strings.Contains(err.Error(), "cluster-secret") {
		t.Fatalf("a client port without a secret: %v; want it refused, naming cluster-secret", err)
	}
}

// A NATS URL's password never shows in an error (they end up in logs).
func TestDialErrorsHidePasswords(t *testing.T) {
	addr := freeAddr(t)
	_, err := cluster.Dial([]string{"nats://xiaozhi-hub:very-secret-password@" + addr}, "test")
	if err == nil {
		t.Fatal("connected to a closed port")
	}
	if strings.Contains(err.Error(), "very-secret-password") || !strings.Contains(err.Error(), addr) {
		t.Fatalf("error %q: want the address without the password", err)
	}
}

// logLines is a slog.Handler keeping what a NATS node logs, so that a test
// waits for the node's own report of an event.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) Enabled(context.Context, slog.Level) bool { return true }
func (l *logLines) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *logLines) WithGroup(string) slog.Handler            { return l }
func (l *logLines) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	l.lines = append(l.lines, r.Message)
	l.mu.Unlock()
	return nil
}

// count is how many lines contain s.
func (l *logLines) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, line := range l.lines {
		if strings.Contains(line, s) {
			n++
		}
	}
	return n
}
