package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/store"
)

// Personas and memories are read at every spoken turn and kept in memory
// between their writes (cache.go): each read must still give the last
// write, whatever it was (a change, a removal, a home deleted), also after
// the hub reopens its file.
func TestPersonasAndMemoriesReadTheLastWrite(t *testing.T) {
	ctx := context.Background()
	path := tempDB(t)
	s := openStore(t, path, store.Options{})
	at := time.Unix(1_790_000_000, 0).UTC()

	wantPersona := func(scope, id string, want hub.Persona) {
		t.Helper()
		for range 2 { // the read that fills the cache, and the one it serves
			got, err := s.Persona(ctx, scope, id)
			if err != nil || got != want {
				t.Fatalf("persona of %s %s: %+v, %v; want %+v", scope, id, got, err, want)
			}
		}
	}
	wantMemory := func(device, text string) {
		t.Helper()
		for range 2 {
			got, err := s.Memory(ctx, device)
			if err != nil || got.Device != device || got.Text != text {
				t.Fatalf("memory of %s: %+v, %v; want %q", device, got, err, text)
			}
		}
	}

	wantPersona("device", "d1", hub.Persona{}) // nothing yet: read and kept as such
	wantMemory("d1", "")
	first := hub.Persona{Name: "小智", Role: "a friendly assistant", Updated: at}
	if err := s.SavePersona(ctx, "device", "d1", first); err != nil {
		t.Fatal(err)
	}
	wantPersona("device", "d1", first)
	second := hub.Persona{Name: "Xiaozhi", Language: "en", Updated: at.Add(time.Minute)}
	if err := s.SavePersona(ctx, "device", "d1", second); err != nil {
		t.Fatal(err)
	}
	wantPersona("device", "d1", second)
	wantPersona("home", "d1", hub.Persona{}) // a home of the same id is another row

	home := hub.Persona{Greeting: "你好", Updated: at}
	if err := s.SavePersona(ctx, "home", "h1", home); err != nil {
		t.Fatal(err)
	}
	wantPersona("home", "h1", home)
	if err := s.DeleteHome(ctx, "h1"); err != nil {
		t.Fatal(err)
	}
	wantPersona("home", "h1", hub.Persona{})

	if err := s.SaveMemory(ctx, hub.Memory{Device: "d1", Text: "likes jazz", Updated: at}); err != nil {
		t.Fatal(err)
	}
	wantMemory("d1", "likes jazz")
	wantMemory("d2", "")
	if err := s.SaveMemory(ctx, hub.Memory{Device: "d1", Text: "likes jazz and tea", Updated: at}); err != nil {
		t.Fatal(err)
	}
	wantMemory("d1", "likes jazz and tea")

	if err := s.SavePersona(ctx, "device", "d1", hub.Persona{}); err != nil { // removed
		t.Fatal(err)
	}
	wantPersona("device", "d1", hub.Persona{})
	if err := s.SaveMemory(ctx, hub.Memory{Device: "d1"}); err != nil { // cleared
		t.Fatal(err)
	}
	wantMemory("d1", "")

	if err := s.SaveMemory(ctx, hub.Memory{Device: "d2", Text: "kept", Updated: at}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, path, store.Options{})
	wantMemory("d2", "kept")
	wantMemory("d1", "")
}

// Many devices talking at once, each reading its own rows while another
// person changes them: a read that starts after a write has returned
// never gives what the write replaced.
func TestPersonaReadsRacingWrites(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, tempDB(t), store.Options{})
	const writes = 200
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { // readers filling the cache all along
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := s.Persona(ctx, "device", "d1"); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for i := range writes {
		p := hub.Persona{Name: string(rune('a' + i%26)), Role: time.Duration(i).String(), Updated: time.Unix(int64(1_790_000_000+i), 0).UTC()}
		if err := s.SavePersona(ctx, "device", "d1", p); err != nil {
			t.Fatal(err)
		}
		if got, err := s.Persona(ctx, "device", "d1"); err != nil || got != p {
			close(stop)
			t.Fatalf("write %d: read %+v, %v; want %+v", i, got, err, p)
		}
	}
	close(stop)
	<-done
}

// A deleted device's persona and memory go with it (read before, so that
// the rows were kept in memory too); its home's persona stays.
func TestDeletedDeviceTakesItsPersonaAndMemory(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, tempDB(t), store.Options{})
	at := time.Unix(1_790_000_000, 0).UTC()
	if err := s.SaveDevice(ctx, hub.Device{ID: "d1", Home: "h1"}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []struct{ scope, id string }{{"device", "d1"}, {"home", "h1"}} {
		if err := s.SavePersona(ctx, p.scope, p.id, hub.Persona{Name: "Jarvis", Updated: at}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.SaveMemory(ctx, hub.Memory{Device: "d1", Text: "My PIN is 1234.", Updated: at}); err != nil {
		t.Fatal(err)
	}
	if p, _ := s.Persona(ctx, "device", "d1"); p.Name != "Jarvis" {
		t.Fatalf("persona before: %+v", p)
	}
	if m, _ := s.Memory(ctx, "d1"); m.Text == "" {
		t.Fatalf("memory before: %+v", m)
	}
	if err := s.DeleteDevice(ctx, "d1"); err != nil {
		t.Fatal(err)
	}
	if p, err := s.Persona(ctx, "device", "d1"); err != nil || p != (hub.Persona{}) {
		t.Fatalf("the deleted device's persona: %+v, %v", p, err)
	}
	if m, err := s.Memory(ctx, "d1"); err != nil || m.Text != "" {
		t.Fatalf("the deleted device's memory: %+v, %v", m, err)
	}
	if p, _ := s.Persona(ctx, "home", "h1"); p.Name != "Jarvis" {
		t.Fatalf("the home's persona went with its device: %+v", p)
	}
	all, err := s.Memories(ctx)
	if err != nil || len(all) != 0 {
		t.Fatalf("memories stored: %+v, %v", all, err)
	}
}
