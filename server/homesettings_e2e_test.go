package server_test

import (
	"strings"
	"testing"
)

// A home's owner sets the voice and the key for the home's devices: the
// next spoken turn of a device in the home uses them, a device of another
// home keeps the hub's; an address of the home's own on the hub's network
// is refused when dialled, and the test button says so; removing the
// home's values brings the hub's back. Guests and other homes' owners
// cannot read or change them.
func TestHomeOwnSettings(t *testing.T) {
	s := newStandIn(t)
	s.homeKey = "sk-home-a"
	p := newPeople(t, s.config(nil))
	a, b := p.rawDevice(devA), p.rawDevice(devB)
	p.mustOK(p.Token, "POST", "/api/homes/"+p.homeA+"/devices", map[string]any{"device": devA}, 200)
	p.mustOK(p.Token, "POST", "/api/homes/"+p.homeB+"/devices", map[string]any{"device": devB}, 200)
	settingsA := "/api/homes/" + p.homeA + "/settings"

	view := p.mustOK(p.alice, "PUT", settingsA, map[string]any{"tts-voice": "nova", "tts-api-key": "sk-home-a"}, 200)["settings"].(map[string]any)
	voice, key, url := view["tts-voice"].(map[string]any), view["tts-api-key"].(map[string]any), view["tts-base-url"].(map[string]any)
	if voice["value"] != "nova" || voice["source"] != "home" || key["set"] != true || key["source"] != "home" || key["value"] != nil {
		t.Fatalf("the home's settings after PUT: voice %v, key %v", voice, key)
	}
	if url["value"] != nil || url["set"] != true || url["source"] != "hub" {
		t.Fatalf("the hub's address shows only as set to a home's owner: %v", url)
	}
	if _, ok := view["conversation-timeout"]; ok {
		t.Fatalf("conversation-timeout is the hub's, not listed for a home: %v", view)
	}

	p.wantError(p.bob, "GET", settingsA, nil, 403, "forbidden")                                                   // a guest in A
	p.wantError(p.alice, "GET", "/api/homes/"+p.homeB+"/settings", nil, 404, "not_found")                         // not in B
	p.wantError(p.alice, "PUT", settingsA, map[string]any{"conversation-timeout": "5s"}, 422, "invalid_argument") // the hub's
	p.wantError(p.alice, "PUT", settingsA, map[string]any{"tts-voise": "x"}, 422, "invalid_argument")             // unknown
	if msg := p.wantError(p.alice, "PUT", settingsA, map[string]any{"tts-provider": "nope"}, 422, "invalid_argument"); !strings.Contains(msg, "tts-provider") {
		t.Fatalf("an unknown provider's message: %s", msg)
	}

	spokenTurn(t, a)
	if v, k := s.lastSpeech(); v != "nova" || k != "sk-home-a" {
		t.Fatalf("home A's device spoke in %q with key %q, want nova with the home's key", v, k)
	}
	spokenTurn(t, b)
	if v, k := s.lastSpeech(); v != "alloy" || k != s.key {
		t.Fatalf("home B's device spoke in %q with key %q, want the hub's alloy and key", v, k)
	}

	// An address of the home's own is dialled only if it is public: the
	// stand-in on 127.0.0.1 is not, and no request reaches it.
	p.mustOK(p.alice, "PUT", settingsA, map[string]any{"agent-base-url": s.srv.URL + "/v1", "agent-api-key": "sk-home-a"}, 200)
	res := p.mustOK(p.alice, "POST", settingsA+"/test", map[string]any{"what": "agent"}, 200)
	if res["ok"] != false || res["problem"] != "unreachable" || !strings.Contains(res["detail"].(string), "not a public address") {
		t.Fatalf("the test of a home's own local address: %v", res)
	}
	res = p.mustOK(p.Token, "POST", "/api/settings/test", map[string]any{"what": "agent"}, 200)
	if res["ok"] != true {
		t.Fatalf("the hub's own test of the same address: %v", res)
	}

	p.mustOK(p.alice, "PUT", settingsA, map[string]any{"tts-voice": nil, "tts-api-key": nil, "agent-base-url": nil, "agent-api-key": nil}, 200)
	spokenTurn(t, a)
	if v, k := s.lastSpeech(); v != "alloy" || k != s.key {
		t.Fatalf("after removing the home's values: %q with key %q, want the hub's", v, k)
	}
}
