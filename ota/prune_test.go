package ota

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/protocol"
	"github.com/xiaozhi-hub/hub/registry"
	"github.com/xiaozhi-hub/hub/registry/registrytest"
)

// pruneHub is an OTA service under PolicyToken over a real registry and
// SQLite store, on a settable clock.
func pruneHub(t *testing.T, maxUnused int) (*Service, *registrytest.Hub, *clock) {
	t.Helper()
	clk := &clock{now: time.Date(2026, 8, 8, 8, 0, 0, 0, time.UTC)}
	h := registrytest.New(t, registry.Options{Now: clk.Now})
	s, err := New(context.Background(), Options{Store: h.DB, Registry: h.Reg, Policy: PolicyToken,
		SecretPath: filepath.Join(t.TempDir(), "device-secret"), Now: clk.Now, MaxUnusedDevices: maxUnused})
	if err != nil {
		t.Fatal(err)
	}
	return s, h, clk
}

// login is a device's first connection under PolicyToken with the token
// the OTA endpoint gave it: the policy binds it, the session registers it.
func login(t *testing.T, s *Service, h *registrytest.Hub, id string, tools ...hub.Tool) *registrytest.Device {
	t.Helper()
	tok := signToken(s.secret, id, "client-"+id, 0)
	if err := s.Authorize(nil, protocol.Identity{DeviceID: id, ClientID: "client-" + id, Token: tok}); err != nil {
		t.Fatalf("%s: %v", id, err)
	}
	return h.Connect(t, id, tools...)
}

func deviceIDs(t *testing.T, h *registrytest.Hub) (registered, stored, trusted []string) {
	t.Helper()
	for _, d := range h.Reg.Devices() {
		registered = append(registered, d.ID)
	}
	snaps, err := h.DB.LoadAll(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range snaps {
		stored = append(stored, s.Device.ID)
	}
	recs, err := h.DB.LoadTrust(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		trusted = append(trusted, r.DeviceID)
	}
	slices.Sort(registered)
	slices.Sort(stored)
	return registered, stored, trusted
}

// A device that never did anything useful is forgotten a day after it was
// last seen, with its trust record, and so is a binding whose device never
// registered; devices with tools, a name, a voice turn or an approval, and
// connected ones, stay however old they are.
func TestUnusedDevicesAreForgottenAndRealOnesKept(t *testing.T) {
	s, h, clk := pruneHub(t, 1000)
	ctx := context.Background()
	login(t, s, h, "aa:00:00:00:00:01").Disconnect() // junk
	login(t, s, h, "aa:00:00:00:00:02", hub.Tool{Name: "self.light.on", InputSchema: []byte(`{"type":"object"}`)}).Disconnect()
	login(t, s, h, "aa:00:00:00:00:03").Disconnect()
	if _, err := h.Reg.UpdateDevice(ctx, "aa:00:00:00:00:03", hub.DevicePatch{Name: new("hall")}); err != nil {
		t.Fatal(err)
	}
	talked := login(t, s, h, "aa:00:00:00:00:04")
	h.Reg.Record(hub.EventVoiceTurn, "aa:00:00:00:00:04", map[string]string{"text": "hello"})
	talked.Disconnect()
	login(t, s, h, "aa:00:00:00:00:05") // stays connected
	// Approved (under another policy, or before a switch to token): a
	// registered device with nothing else.
	approved := Trust{DeviceID: "aa:00:00:00:00:06", ClientID: "c", Approved: clk.Now()}
	if err := h.DB.SaveTrust(ctx, approved); err != nil {
		t.Fatal(err)
	}
	s.trust[approved.DeviceID] = approved
	if _, err := h.Reg.Register(ctx, approved.DeviceID, hub.DevicePatch{}); err != nil {
		t.Fatal(err)
	}
	// Bound at the WebSocket, never registered (no hello).
	if err := s.Authorize(nil, protocol.Identity{DeviceID: "aa:00:00:00:00:07", ClientID: "c7",
		Token: signToken(s.secret, "aa:00:00:00:00:07", "c7", 0)}); err != nil {
		t.Fatal(err)
	}
	waitHistory(t, h, "aa:00:00:00:00:04")

	if n, err := s.PruneUnused(ctx); err != nil || n != 0 {
		t.Fatalf("pruning within a day of the devices' visit forgot %d (%v)", n, err)
	}
	clk.Add(24*time.Hour + time.Second)
	if n, err := s.PruneUnused(ctx); err != nil || n != 1 {
		t.Fatalf("pruning a day later forgot %d devices (%v), want 1", n, err)
	}
	registered, stored, trusted := deviceIDs(t, h)
	want := []string{"aa:00:00:00:00:02", "aa:00:00:00:00:03", "aa:00:00:00:00:04", "aa:00:00:00:00:05", "aa:00:00:00:00:06"}
	if !slices.Equal(registered, want) || !slices.Equal(stored, want) {
		t.Fatalf("registered %v, stored %v; want %v", registered, stored, want)
	}
	if !slices.Equal(trusted, want) {
		t.Fatalf("trust records %v; want %v", trusted, want)
	}
	// A forgotten device that comes back is a new device like any other.
	login(t, s, h, "aa:00:00:00:00:01").Disconnect()
	if _, err := h.Reg.Device("aa:00:00:00:00:01"); err != nil {
		t.Fatal(err)
	}
}

func waitHistory(t *testing.T, h *registrytest.Hub, id string) {
	t.Helper()
	for range 1000 { // the event log is written in the background
		if ok, err := h.DB.HasHistory(context.Background(), id); err != nil || ok {
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Fatalf("the voice turn of %s was not stored", id)
}

// Beyond MaxUnusedDevices, a new device's arrival forgets the unused ones
// seen longest ago; the real ones stay.
func TestUnusedDevicesAreBoundedInNumber(t *testing.T) {
	s, h, clk := pruneHub(t, 3)
	login(t, s, h, "aa:00:00:00:01:00", hub.Tool{Name: "self.light.on", InputSchema: []byte(`{"type":"object"}`)}).Disconnect()
	for i := range 8 {
		clk.Add(time.Second)
		login(t, s, h, "bb:00:00:00:01:0"+string(rune('0'+i))).Disconnect()
	}
	registered, _, trusted := deviceIDs(t, h)
	// Each arrival made room first: 3 unused ones and the newest.
	want := []string{"aa:00:00:00:01:00", "bb:00:00:00:01:04", "bb:00:00:00:01:05", "bb:00:00:00:01:06", "bb:00:00:00:01:07"}
	if !slices.Equal(registered, want) {
		t.Fatalf("registered %v; want %v", registered, want)
	}
	if len(trusted) != len(want) {
		t.Fatalf("trust records %v; want those of %v", trusted, want)
	}
}

// A storm of new devices within bounds does not count the unused devices
// once per device (each count reads every device: a storm of n devices
// would read n² of them), and the bound still holds when the storm comes
// all at once: each arrival beyond it makes room first.
func TestNewDevicesCountUnusedOnesRarely(t *testing.T) {
	s, h, _ := pruneHub(t, 1000)
	for i := range 200 {
		login(t, s, h, fmt.Sprintf("cc:00:00:00:%02x:%02x", i/256, i%256)).Disconnect()
	}
	if s.counts > 1 {
		t.Fatalf("200 new devices within a second, 200 unused of at most 1000: counted %d times; want once", s.counts)
	}
	s, h, _ = pruneHub(t, 3)
	for i := range 8 {
		login(t, s, h, "bb:00:00:00:01:0"+string(rune('0'+i))).Disconnect()
	}
	registered, _, _ := deviceIDs(t, h)
	want := []string{"bb:00:00:00:01:04", "bb:00:00:00:01:05", "bb:00:00:00:01:06", "bb:00:00:00:01:07"}
	if !slices.Equal(registered, want) {
		t.Fatalf("8 unused devices arriving at once with at most 3: registered %v; want %v", registered, want)
	}
}
