package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/registry"
)

// Keys in the state bucket.
func deviceKey(id string) string      { return "d." + key(id) }
func toolsKey(id string) string       { return "t." + key(id) }
func toolsetKey(hash string) string   { return "s." + key(hash) }
func thingKey(id, name string) string { return "i." + key(id) + "." + key(name) }
func thingsPrefix(id string) string   { return "i." + key(id) + "." }
func parseKey(k string) (kind, id, name string, ok bool) {
	parts := strings.Split(k, ".")
	if len(parts) < 2 {
		return "", "", "", false
	}
	id, ok = unkey(parts[1])
	if !ok {
		return "", "", "", false
	}
	if parts[0] == "i" || parts[0] == "lh" { // a device's thing, a home's setting
		if len(parts) != 3 {
			return "", "", "", false
		}
		name, ok = unkey(parts[2])
	}
	return parts[0], id, name, ok
}

// sharedStore is the registry's store on a cluster node: each change goes
// to the shared state, then to the node's own store. Reads and events stay
// local; the history (calls and events) is one stream (history.go).
type sharedStore struct {
	registry.Store
	n *Node
}

// fromBucketKey marks the context of the registry's writes that bring
// this node up to the shared state (apply, reapply): what they write is
// in the bucket already, so they go to the node's own store only. Written
// back, a record applied late would be merged as this node's change onto
// a newer one and take back what that one changed.
type fromBucketKey struct{}

func fromBucket(ctx context.Context) context.Context {
	return context.WithValue(ctx, fromBucketKey{}, true)
}

func isFromBucket(ctx context.Context) bool { return ctx.Value(fromBucketKey{}) != nil }

func (s *sharedStore) SaveDevice(ctx context.Context, d hub.Device) error {
	if isFromBucket(ctx) {
		return s.Store.SaveDevice(ctx, d)
	}
	if err := s.n.putDevice(ctx, d); err != nil {
		return hub.Errorf(hub.EUNAVAILABLE, "the cluster's shared state did not take the change of device %q: %v", d.ID, err)
	}
	return s.Store.SaveDevice(ctx, d)
}

func (s *sharedStore) SaveTools(ctx context.Context, id, hash string, tools []hub.Tool) error {
	if isFromBucket(ctx) {
		return s.Store.SaveTools(ctx, id, hash, tools)
	}
	if err := s.n.putTools(ctx, id, hash, tools); err != nil {
		return hub.Errorf(hub.EUNAVAILABLE, "the cluster's shared state did not take the tools of device %q: %v", id, err)
	}
	return s.Store.SaveTools(ctx, id, hash, tools)
}

func (s *sharedStore) SaveThing(ctx context.Context, id string, t hub.Thing) error {
	if isFromBucket(ctx) {
		return s.Store.SaveThing(ctx, id, t)
	}
	b, err := json.Marshal(t)
	if err != nil {
		return err
	}
	if err := s.n.put(ctx, thingKey(id, t.Name), b); err != nil {
		return hub.Errorf(hub.EUNAVAILABLE, "the cluster's shared state did not take thing %s of device %q: %v", t.Name, id, err)
	}
	return s.Store.SaveThing(ctx, id, t)
}

func (s *sharedStore) DeleteDevice(ctx context.Context, id string) error {
	if isFromBucket(ctx) {
		return s.Store.DeleteDevice(ctx, id)
	}
	if err := s.n.deleteDevice(ctx, id); err != nil {
		return hub.Errorf(hub.EUNAVAILABLE, "the cluster's shared state did not take the deletion of device %q: %v", id, err)
	}
	return s.Store.DeleteDevice(ctx, id)
}

// put writes a value this node produced, unless the bucket already holds
// it (a change that came from the bucket, being applied here).
func (n *Node) put(ctx context.Context, k string, val []byte) error {
	n.mu.Lock()
	cur, ok := n.seen[k]
	n.mu.Unlock()
	if ok && !cur.deleted && bytes.Equal(cur.val, val) {
		return nil
	}
	var rev uint64
	err := n.transient(ctx, func() (err error) {
		rev, err = n.state.Put(ctx, k, val)
		return err
	})
	if err != nil {
		return err
	}
	n.note(k, seenValue{rev: rev, val: val})
	return nil
}

// transient runs a write to the shared state, again for up to 10 s while
// it fails for want of an answer (JetStream electing a stream's leader
// after a NATS node left), but not when it was refused.
func (n *Node) transient(ctx context.Context, write func() error) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := write()
		if err == nil || errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyRevisionMismatch) ||
			errors.Is(err, jetstream.ErrKeyNotFound) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return errors.Join(err, ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func (n *Node) note(k string, v seenValue) {
	n.mu.Lock()
	if cur, ok := n.seen[k]; !ok || v.rev >= cur.rev {
		n.seen[k] = v
	}
	n.mu.Unlock()
}

// putDevice writes a device record with compare-and-set. What is written
// is the newest shared record with this change applied: the fields in
// which d differs from the registry's record before the change (a person's
// rename, a system-info report), and, on the node holding the device's
// connection, what the device reports about itself (it is the authority on
// those). A write that raced another node's is merged again onto that one.
func (n *Node) putDevice(ctx context.Context, d hub.Device) error {
	k := deviceKey(d.ID)
	d = registry.Stored(d)
	before, owner := registry.Stored(hub.Device{ID: d.ID}), false
	if cur, err := n.reg.Device(d.ID); err == nil {
		before, owner = registry.Stored(cur), cur.Online && cur.Node == ""
	}
	n.mu.Lock()
	cur, ok := n.seen[k]
	n.mu.Unlock()
	for range 8 {
		next := d
		if ok && !cur.deleted {
			var theirs hub.Device
			if err := json.Unmarshal(cur.val, &theirs); err != nil {
				return fmt.Errorf("device record of %s in the shared state: %w", d.ID, err)
			}
			next = merge(before, d, theirs, owner)
		}
		val, err := canonical(next)
		if err != nil {
			return err
		}
		if ok && !cur.deleted && bytes.Equal(cur.val, val) {
			return nil
		}
		var rev uint64
		err = n.transient(ctx, func() (err error) {
			if !ok || cur.deleted {
				rev, err = n.state.Create(ctx, k, val)
			} else {
				rev, err = n.state.Update(ctx, k, val, cur.rev)
			}
			return err
		})
		if err == nil {
			n.note(k, seenValue{rev: rev, val: val})
			if !reflect.DeepEqual(registry.Stored(next), d) {
				n.reapply(next, rev) // the registry holds only this node's side
			}
			return nil
		}
		if !errors.Is(err, jetstream.ErrKeyExists) && !errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			return err
		}
		// Another node wrote first: merge onto what it wrote.
		latest, err := n.state.Get(ctx, k)
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound):
			cur, ok = seenValue{deleted: true}, true
		case err != nil:
			return err
		default:
			cur, ok = seenValue{rev: latest.Revision(), val: latest.Value()}, true
		}
	}
	return fmt.Errorf("device %s: too many concurrent changes", d.ID)
}

// canonical is a device record as the bucket holds it: marshalled after
// one round trip, so that a record read from the bucket and saved again
// gives the same bytes (times and raw JSON in one form), and is
// recognised as nothing new.
func canonical(d hub.Device) ([]byte, error) {
	b, err := json.Marshal(d)
	if err != nil {
		return nil, err
	}
	var again hub.Device
	if err := json.Unmarshal(b, &again); err != nil {
		return nil, err
	}
	return json.Marshal(again)
}

// merge is theirs with this node's change: the fields where ours differs
// from before, and, when this node holds the device, what the device
// reports about itself (registry.Reported), which it writes as it is.
func merge(before, ours, theirs hub.Device, owner bool) hub.Device {
	b, o, t := reflect.ValueOf(before), reflect.ValueOf(ours), reflect.ValueOf(&theirs).Elem()
	for i := range b.NumField() {
		if !reflect.DeepEqual(b.Field(i).Interface(), o.Field(i).Interface()) {
			t.Field(i).Set(o.Field(i))
		}
	}
	if owner {
		theirs = registry.Reported(theirs, ours)
	}
	return theirs
}

// reapply brings the registry's record of a device up to the merged
// record written as revision rev, unless a newer revision has come since.
func (n *Node) reapply(d hub.Device, rev uint64) {
	if n.ctx == nil {
		return
	}
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		n.mu.Lock()
		newer := n.seen[deviceKey(d.ID)].rev != rev
		n.mu.Unlock()
		if newer {
			return
		}
		if err := n.reg.Apply(fromBucket(n.ctx), d, n.still(deviceKey(d.ID), rev)); err != nil && hub.ErrorCode(err) != hub.ENOTFOUND {
			n.log.Warn("could not apply a merged device record", "device", d.ID, "err", err)
		}
	}()
}

func (n *Node) putTools(ctx context.Context, id, hash string, tools []hub.Tool) error {
	sk := toolsetKey(hash)
	n.mu.Lock()
	_, known := n.seen[sk]
	n.mu.Unlock()
	if !known {
		b, err := json.Marshal(tools)
		if err != nil {
			return err
		}
		rev, err := n.state.Create(ctx, sk, b)
		switch {
		case err == nil:
			n.note(sk, seenValue{rev: rev, val: b})
		case errors.Is(err, jetstream.ErrKeyExists): // stored once per content
			n.note(sk, seenValue{rev: 1, val: b})
		default:
			return err
		}
	}
	return n.put(ctx, toolsKey(id), []byte(hash))
}

// deleteDevice removes a device's keys from the shared state: the device,
// its tools and things, its own persona and its memory.
func (n *Node) deleteDevice(ctx context.Context, id string) error {
	k := deviceKey(id)
	n.mu.Lock()
	cur, ok := n.seen[k]
	n.mu.Unlock()
	if ok && cur.deleted {
		return nil // the deletion came from the bucket
	}
	keys := []string{k, toolsKey(id), personaKey("device", id), memoryKey(id)}
	lister, err := n.state.ListKeysFiltered(ctx, thingsPrefix(id)+">")
	if err == nil {
		for tk := range lister.Keys() {
			keys = append(keys, tk)
		}
	}
	for _, dk := range keys {
		if err := n.state.Delete(ctx, dk); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
			return err
		}
		n.note(dk, seenValue{deleted: true, rev: cur.rev + 1})
	}
	return nil
}

// syncState applies the whole shared state to the registry, then puts in
// the shared state what only this node knew (a hub joining a cluster
// with devices of its own), then follows the bucket.
func (n *Node) syncState(ctx context.Context) error {
	var w jetstream.KeyWatcher
	err := retry(ctx, 30*time.Second, func() (err error) {
		w, err = n.state.WatchAll(n.ctx)
		return err
	})
	if err != nil {
		return err
	}
	inShared := map[string]bool{}
	for initial := true; initial; {
		select {
		case <-ctx.Done():
			w.Stop()
			return ctx.Err()
		case e, ok := <-w.Updates():
			if !ok {
				return errors.New("the shared state's watch ended")
			}
			if e == nil {
				initial = false
				break
			}
			n.stateW.saw(e.Revision())
			if kind, id, _, ok := parseKey(e.Key()); ok && kind == "d" {
				inShared[id] = true
			}
			n.apply(ctx, e)
		}
	}
	for _, d := range n.reg.Devices() {
		if inShared[d.ID] {
			continue
		}
		if err := n.putDevice(ctx, d); err != nil {
			return err
		}
		if tools, _, err := n.reg.Tools(d.ID); err == nil && d.ToolsHash != "" {
			if err := n.putTools(ctx, d.ID, d.ToolsHash, tools); err != nil {
				return err
			}
		}
		things, _ := n.reg.Things(d.ID)
		for _, t := range things {
			b, _ := json.Marshal(t)
			if err := n.put(ctx, thingKey(d.ID, t.Name), b); err != nil {
				return err
			}
		}
	}
	if err := n.seedOAuth(ctx); err != nil {
		return err
	}
	if err := n.seedTrust(ctx); err != nil {
		return err
	}
	if err := n.seedAccounts(ctx); err != nil {
		return err
	}
	n.spawn(func() {
		n.follow(n.stateW, w, func(e jetstream.KeyValueEntry) {
			select {
			case n.applyQ <- e:
			case <-n.ctx.Done():
			}
		})
	})
	return nil
}

func (n *Node) applyLoop() {
	for {
		select {
		case <-n.ctx.Done():
			return
		case e := <-n.applyQ:
			n.apply(n.ctx, e)
		}
	}
}

// still reports whether revision rev is still the newest this node has of
// key k: a change made here since must not be overwritten by it.
func (n *Node) still(k string, rev uint64) func() bool {
	return func() bool {
		n.mu.Lock()
		defer n.mu.Unlock()
		return n.seen[k].rev == rev
	}
}

// toolset is a stored tool list. The watch delivers it before any pointer
// to it (it is written first), so it is usually known already; a read of
// the bucket is the fallback, retried while a replica catches up.
func (n *Node) toolset(ctx context.Context, hash string) ([]hub.Tool, error) {
	k := toolsetKey(hash)
	n.mu.Lock()
	v, ok := n.seen[k]
	n.mu.Unlock()
	val := v.val
	if !ok || v.deleted {
		err := retry(ctx, 5*time.Second, func() error {
			e, err := n.state.Get(ctx, k)
			if err == nil {
				val = e.Value()
				n.note(k, seenValue{rev: e.Revision(), val: val})
			}
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("tool list %s: %w", hash, err)
		}
	}
	var tools []hub.Tool
	if err := json.Unmarshal(val, &tools); err != nil {
		return nil, fmt.Errorf("tool list %s in the shared state: %w", hash, err)
	}
	return tools, nil
}

// apply brings the registry up to one entry of the shared state, unless
// this node already has it (its own write, or an older revision).
func (n *Node) apply(ctx context.Context, e jetstream.KeyValueEntry) {
	k := e.Key()
	deleted := e.Operation() != jetstream.KeyValuePut
	n.mu.Lock()
	cur, ok := n.seen[k]
	if ok && e.Revision() <= cur.rev {
		n.mu.Unlock()
		return
	}
	n.seen[k] = seenValue{rev: e.Revision(), val: e.Value(), deleted: deleted}
	n.mu.Unlock()
	kind, id, name, ok := parseKey(k)
	if !ok {
		return
	}
	ctx = fromBucket(ctx)
	var err error
	switch {
	case kind == "d" && deleted:
		err = n.reg.ApplyDelete(ctx, id)
		if hub.ErrorCode(err) == hub.ENOTFOUND {
			err = nil
		}
	case kind == "d":
		var d hub.Device
		if err = json.Unmarshal(e.Value(), &d); err == nil {
			if err = n.reg.Apply(ctx, d, n.still(k, e.Revision())); err == nil {
				n.attachWaiting(id)
			}
		}
	case kind == "t" && !deleted:
		var tools []hub.Tool
		if tools, err = n.toolset(ctx, string(e.Value())); err == nil {
			err = n.reg.ApplyTools(ctx, id, string(e.Value()), tools)
		}
	case kind == "oc" || kind == "og":
		err = n.applyOAuth(ctx, kind, id, e.Value(), deleted)
	case kind == "au" || kind == "ah" || kind == "at":
		err = n.applyAccounts(ctx, k, kind, id, e.Value(), deleted)
	case kind == "sv":
		err = n.applyService(ctx, id)
	case isSettingsKind(kind):
		err = n.applySetting(ctx, k)
	case kind == "a" && !deleted && n.trust != nil:
		var d decision
		if err = json.Unmarshal(e.Value(), &d); err == nil {
			err = n.trust.ApplyTrust(ctx, d.trust())
		}
	case kind == "i" && !deleted:
		var t hub.Thing
		if err = json.Unmarshal(e.Value(), &t); err == nil && t.Name == name {
			err = n.reg.ApplyThing(ctx, id, t)
		}
	}
	if err != nil && hub.ErrorCode(err) != hub.ENOTFOUND {
		n.log.Warn("could not apply a change from the cluster", "key", k, "device", id, "err", err)
	}
}
