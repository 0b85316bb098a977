package livesettings_test

import (
	"context"
	"net/netip"
	"strings"
	"testing"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/config"
	"github.com/xiaozhi-hub/hub/livesettings"
)

func ptr(s string) *string { return &s }

// hubWithKeys is a hub whose agent and synthesis use the admin's keys at
// the admin's addresses.
func hubWithKeys() config.Config {
	c := base()
	c.TTSAPIKey = "sk-hub-tts"
	c.AgentProvider, c.AgentBaseURL, c.AgentAPIKey, c.AgentModel = "openai", "http://10.0.0.5:11434/v1", "sk-hub-agent", "qwen"
	return c
}

// A home's values fall back one by one to the hub's, but the hub's key
// and address never go with a provider or an address the home chose.
func TestHomeSettingsKeepTheHubsKeysWithTheHubsProviders(t *testing.T) {
	ctx := context.Background()
	st := openStore(t, t.TempDir())
	s, err := livesettings.Open(ctx, livesettings.Options{Store: st, Homes: st, Base: hubWithKeys()})
	if err != nil {
		t.Fatal(err)
	}
	if s.For("h1") != s.Current() || s.For("") != s.Current() {
		t.Fatal("a home that sets nothing does not get the hub's settings")
	}
	// Only a key: the hub's provider and address with the home's key.
	if _, err := s.SetHome(ctx, "h1", map[string]*string{"tts-api-key": ptr("sk-h1"), "tts-voice": ptr("nova")}); err != nil {
		t.Fatal(err)
	}
	c := s.For("h1").Config
	if c.TTSProvider != "openai" || c.TTSBaseURL != "http://127.0.0.1:9/v1" || c.TTSAPIKey != "sk-h1" || c.TTSVoice != "nova" || c.TTSModel != s.Current().Config.TTSModel {
		t.Fatalf("home h1's synthesis: %+v", c)
	}
	if c.AgentAPIKey != "sk-hub-agent" || c.AgentBaseURL != "http://10.0.0.5:11434/v1" {
		t.Fatalf("a home that does not touch the agent gets the hub's: %q %q", c.AgentAPIKey, c.AgentBaseURL)
	}
	// Another provider, no key of its own: neither the hub's key nor its
	// address go there.
	if _, err := s.SetHome(ctx, "h2", map[string]*string{"agent-provider": ptr("anthropic"), "agent-model": ptr("claude-x")}); err != nil {
		t.Fatal(err)
	}
	c = s.For("h2").Config
	if c.AgentProvider != "anthropic" || c.AgentAPIKey != "" || c.AgentBaseURL != "" || c.AgentAuthToken != "" {
		t.Fatalf("home h2's agent: provider %q key %q url %q", c.AgentProvider, c.AgentAPIKey, c.AgentBaseURL)
	}
	if s.For("h2").LLMErr == nil {
		t.Fatal("a home provider without a key is ready")
	}
	// An address of its own: the hub's key stays home.
	if _, err := s.SetHome(ctx, "h3", map[string]*string{"agent-base-url": ptr("https://api.deepseek.com/v1")}); err != nil {
		t.Fatal(err)
	}
	if c = s.For("h3").Config; c.AgentAPIKey != "" || c.AgentProvider != "openai" {
		t.Fatalf("home h3's agent: key %q provider %q", c.AgentAPIKey, c.AgentProvider)
	}
	v := s.HomeView("h3")
	if v["agent-api-key"].Source != hub.SourceDefault || *v["agent-api-key"].Set || v["agent-base-url"].Source != livesettings.SourceHome || *v["agent-base-url"].Value != "https://api.deepseek.com/v1" {
		t.Fatalf("home h3's view: key %+v url %+v", v["agent-api-key"], v["agent-base-url"])
	}
	if hv := s.HomeView("h1")["agent-base-url"]; hv.Value != nil || !*hv.Set || hv.Source != livesettings.SourceHub {
		t.Fatalf("the hub's address shows to a home as set, not its value: %+v", hv)
	}

	// A change of the hub's reaches the homes that do not set it.
	if _, err := s.Set(ctx, map[string]*string{"tts-model": ptr("tts-2")}); err != nil {
		t.Fatal(err)
	}
	if c = s.For("h1").Config; c.TTSModel != "tts-2" || c.TTSVoice != "nova" {
		t.Fatalf("after the hub's change: model %q voice %q", c.TTSModel, c.TTSVoice)
	}
	if _, err := s.SetHome(ctx, "h1", map[string]*string{"conversation-timeout": ptr("5s")}); hub.ErrorCode(err) != hub.EINVALID {
		t.Fatalf("conversation-timeout for a home: %v", err)
	}

	// Stored: a restart keeps them; a deleted home's go with it.
	s2, err := livesettings.Open(ctx, livesettings.Options{Store: st, Homes: st, Base: hubWithKeys()})
	if err != nil {
		t.Fatal(err)
	}
	if c = s2.For("h1").Config; c.TTSAPIKey != "sk-h1" || c.TTSVoice != "nova" {
		t.Fatalf("after a restart: %q %q", c.TTSAPIKey, c.TTSVoice)
	}
	if err := st.DeleteHome(ctx, "h1"); err != nil {
		t.Fatal(err)
	}
	s2.ForgetHome("h1")
	s3, err := livesettings.Open(ctx, livesettings.Options{Store: st, Homes: st, Base: hubWithKeys()})
	if err != nil {
		t.Fatal(err)
	}
	if s2.For("h1") != s2.Current() || s3.For("h1") != s3.Current() {
		t.Fatal("a deleted home's settings are still applied")
	}
}

// A test of a home's own address on the hub's network is refused when
// dialled, and says so; the hub's own test of it is not.
func TestHomeTestReachesOnlyPublicAddresses(t *testing.T) {
	s, err := livesettings.Open(context.Background(), livesettings.Options{Store: openStore(t, t.TempDir()), Homes: openStore(t, t.TempDir()), Base: base()})
	if err != nil {
		t.Fatal(err)
	}
	given := map[string]string{"tts-base-url": "http://127.0.0.1:9/v1"}
	r, err := s.TestHome(context.Background(), "h", "tts", given)
	if err != nil || r.OK || r.Problem != livesettings.ProblemUnreachable || !strings.Contains(r.Detail, "not a public address") {
		t.Fatalf("a home's test of 127.0.0.1: %+v %v", r, err)
	}
	r, _ = s.Test(context.Background(), "tts", given)
	if strings.Contains(r.Detail, "not a public address") {
		t.Fatalf("the hub's own test is refused too: %+v", r)
	}
}

func TestPublic(t *testing.T) {
	for addr, want := range map[string]bool{
		"8.8.8.8": true, "2606:4700::1111": true, "1.1.1.1": true,
		"127.0.0.1": false, "::1": false, "10.1.2.3": false, "172.16.0.1": false, "192.168.1.1": false,
		"169.254.169.254": false, "fe80::1": false, "fd00::1": false, "100.64.0.1": false, "0.0.0.0": false,
		"::ffff:127.0.0.1": false, "::ffff:8.8.8.8": true, "64:ff9b::a00:1": false, "2002:a00:1::1": false,
		"224.0.0.1": false, "198.18.0.1": false, "::": false,
	} {
		if got := livesettings.Public(netip.MustParseAddr(addr)); got != want {
			t.Errorf("Public(%s) = %v, want %v", addr, got, want)
		}
	}
}

// A home's tests are bounded (they reach addresses its owner chose): the
// sixth in a row is refused with when to try again; another home is not.
func TestHomeTestsAreBounded(t *testing.T) {
	st := openStore(t, t.TempDir())
	s, err := livesettings.Open(context.Background(), livesettings.Options{Store: st, Homes: st, Base: base()})
	if err != nil {
		t.Fatal(err)
	}
	invalid := map[string]string{"tts-base-url": "ftp://x"} // answered without a request
	for i := range 5 {
		if _, err := s.TestHome(context.Background(), "h", "tts", invalid); err != nil {
			t.Fatalf("test %d: %v", i+1, err)
		}
	}
	_, err = s.TestHome(context.Background(), "h", "tts", invalid)
	if hub.ErrorCode(err) != hub.ETOOMANY || hub.RetryAfter(err) <= 0 {
		t.Fatalf("the sixth test: %v", err)
	}
	if _, err := s.TestHome(context.Background(), "other", "tts", invalid); err != nil {
		t.Fatalf("another home's test: %v", err)
	}
}
