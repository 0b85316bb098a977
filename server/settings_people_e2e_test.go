package server_test

import (
	"strings"
	"testing"
)

// Settings are the admin's: a person gets 403 saying so. Personas and
// memory follow the homes: alice (owner of A) reads and sets devA's and
// home A's; bob, a guest in A, is refused; devB (home B) is to alice
// exactly an unknown device, and home B an unknown home.
func TestPeopleSettingsPersonasAndMemory(t *testing.T) {
	p := newPeople(t, nil)
	p.devices()
	for _, r := range []struct{ method, path string }{{"GET", "/api/settings"}, {"PUT", "/api/settings"}, {"POST", "/api/settings/test"}} {
		if msg := p.wantError(p.alice, r.method, r.path, map[string]any{"what": "tts"}, 403, "forbidden"); msg != "only the admin reads and changes the hub's settings" {
			t.Errorf("%s %s as alice: %q", r.method, r.path, msg)
		}
	}
	p.mustOK(p.alice, "PUT", "/api/devices/"+devA+"/persona", map[string]any{"name": "阿福"}, 200)
	p.mustOK(p.alice, "PUT", "/api/homes/"+p.homeA+"/persona", map[string]any{"voice": "nova"}, 200)
	eff := p.mustOK(p.alice, "GET", "/api/devices/"+devA+"/persona", nil, 200)["effective"].(map[string]any)
	if eff["name"] != "阿福" || eff["voice"] != "nova" {
		t.Fatalf("devA's persona: %v", eff)
	}
	p.mustOK(p.alice, "GET", "/api/devices/"+devA+"/memory", nil, 200)
	p.mustOK(p.alice, "DELETE", "/api/devices/"+devA+"/memory", nil, 204)

	for _, r := range []struct{ method, path string }{
		{"GET", "/api/devices/" + devA + "/persona"}, {"PUT", "/api/devices/" + devA + "/persona"},
		{"GET", "/api/devices/" + devA + "/memory"}, {"DELETE", "/api/devices/" + devA + "/memory"},
		{"GET", "/api/homes/" + p.homeA + "/persona"}, {"PUT", "/api/homes/" + p.homeA + "/persona"},
	} {
		p.wantError(p.bob, r.method, r.path, map[string]any{"name": "x"}, 403, "forbidden")
	}
	unknown := p.wantError(p.alice, "GET", "/api/devices/"+unknownID+"/persona", nil, 404, "not_found")
	for _, r := range []struct{ method, path string }{
		{"GET", "/api/devices/" + devB + "/persona"}, {"PUT", "/api/devices/" + devB + "/persona"},
		{"GET", "/api/devices/" + devB + "/memory"}, {"DELETE", "/api/devices/" + devB + "/memory"},
	} {
		if msg := p.wantError(p.alice, r.method, r.path, map[string]any{"name": "x"}, 404, "not_found"); strings.ReplaceAll(msg, devB, "X") != strings.ReplaceAll(unknown, unknownID, "X") {
			t.Errorf("%s %s as alice: %q, an unknown device's is %q", r.method, r.path, msg, unknown)
		}
	}
	p.wantError(p.alice, "GET", "/api/homes/"+p.homeB+"/persona", nil, 404, "not_found")
	p.wantError(p.alice, "PUT", "/api/homes/"+p.homeB+"/persona", map[string]any{"name": "x"}, 404, "not_found")
	// The admin reaches every device and home.
	p.mustOK(p.Token, "GET", "/api/devices/"+devB+"/persona", nil, 200)
	p.mustOK(p.Token, "PUT", "/api/homes/"+p.homeB+"/persona", map[string]any{"name": "B's"}, 200)
}
