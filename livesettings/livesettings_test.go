package livesettings_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/agent"
	"github.com/xiaozhi-hub/hub/config"
	"github.com/xiaozhi-hub/hub/livesettings"
	"github.com/xiaozhi-hub/hub/ogg"
	"github.com/xiaozhi-hub/hub/store"
)

func openStore(t *testing.T, dir string) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(dir, "hub.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

func base() config.Config {
	c := config.Default()
	c.TTSProvider, c.TTSBaseURL, c.TTSVoice = "openai", "http://127.0.0.1:9/v1", "alloy"
	return c
}

// A change is all or nothing: one bad value keeps every other from being
// stored or applied; a good one swaps the providers at once.
func TestSetIsAllOrNothing(t *testing.T) {
	dir := t.TempDir()
	s, err := livesettings.Open(context.Background(), livesettings.Options{Store: openStore(t, dir), Base: base()})
	if err != nil {
		t.Fatal(err)
	}
	before := s.Current()
	voice, bad := "nova", "ws://x"
	if _, err := s.Set(context.Background(), map[string]*string{"tts-voice": &voice, "tts-base-url": &bad}); hub.ErrorCode(err) != hub.EINVALID || !strings.Contains(err.Error(), "tts-base-url") {
		t.Fatalf("a bad base URL: %v", err)
	}
	if s.Current() != before || s.View()["tts-voice"].Source != hub.SourceDefault && *s.View()["tts-voice"].Value != "alloy" {
		t.Fatal("a refused change was applied")
	}
	if _, err := s.Set(context.Background(), map[string]*string{"tts-voice": &voice}); err != nil {
		t.Fatal(err)
	}
	if c := s.Current(); c == before || c.Config.TTSVoice != "nova" || c.Synthesizer == before.Synthesizer {
		t.Fatalf("not swapped: %+v", c.Config.TTSVoice)
	}
	long := strings.Repeat("x", 2049)
	if _, err := s.Set(context.Background(), map[string]*string{"tts-model": &long}); hub.ErrorCode(err) != hub.EINVALID {
		t.Fatalf("a 2049-byte value: %v", err)
	}
	ctl := "a\nb"
	if _, err := s.Set(context.Background(), map[string]*string{"tts-model": &ctl}); hub.ErrorCode(err) != hub.EINVALID {
		t.Fatalf("a value with a newline: %v", err)
	}
}

// Stored values that no longer make a valid configuration do not keep the
// hub from starting: the file's apply.
func TestOpenIgnoresStoredValuesThatNoLongerWork(t *testing.T) {
	dir := t.TempDir()
	st := openStore(t, dir)
	now := time.Now()
	if err := st.SaveSettings(context.Background(), []hub.StoredSetting{{Name: "tts-provider", Value: "gone", Updated: now}, {Name: "old-setting", Value: "x", Updated: now}}, nil); err != nil {
		t.Fatal(err)
	}
	s, err := livesettings.Open(context.Background(), livesettings.Options{Store: st, Base: base()})
	if err != nil {
		t.Fatal(err)
	}
	if c := s.Current(); c.Config.TTSProvider != "openai" || s.View()["tts-provider"].Source != hub.SourceFile {
		t.Fatalf("tts-provider %q from %s", c.Config.TTSProvider, s.View()["tts-provider"].Source)
	}
}

// Without a model configured, the agent's provider says what to set; the
// LLM follows a change at its next request.
func TestLLMFollowsTheSettings(t *testing.T) {
	s, err := livesettings.Open(context.Background(), livesettings.Options{Store: openStore(t, t.TempDir()), Base: base()})
	if err != nil {
		t.Fatal(err)
	}
	llm := s.LLM()
	if err := llm.Ready(); hub.ErrorCode(err) != hub.EUNAVAILABLE || !strings.Contains(err.Error(), "ANTHROPIC_API_KEY") {
		t.Fatalf("Ready without a model: %v", err)
	}
	if _, err := llm.Chat(context.Background(), agent.Request{}, nil); hub.ErrorCode(err) != hub.EUNAVAILABLE {
		t.Fatalf("Chat without a model: %v", err)
	}
	p, url, model := "openai", "http://127.0.0.1:9/v1", "qwen"
	if _, err := s.Set(context.Background(), map[string]*string{"agent-provider": &p, "agent-base-url": &url, "agent-model": &model}); err != nil {
		t.Fatal(err)
	}
	if llm.Ready() != nil || llm.Name() != "openai" || s.Current().Agent.Model != "qwen" {
		t.Fatalf("after the change: %v %q %q", llm.Ready(), llm.Name(), s.Current().Agent.Model)
	}
}

// classify's words for what failed, from the errors the providers give.
func TestTestSaysWhatFailed(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nobody answers there now
	s, err := livesettings.Open(context.Background(), livesettings.Options{Store: openStore(t, t.TempDir()), Base: base()})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		what    string
		given   map[string]string
		problem string
	}{
		{"tts", map[string]string{"tts-base-url": "http://" + addr + "/v1"}, livesettings.ProblemUnreachable},
		{"asr", nil, livesettings.ProblemNotConfigured},
		{"agent", nil, livesettings.ProblemNotConfigured},
		{"agent", map[string]string{"agent-provider": "openai", "agent-base-url": "http://" + addr + "/v1", "agent-model": "m"}, livesettings.ProblemUnreachable},
		{"tts", map[string]string{"tts-base-url": "ftp://x"}, livesettings.ProblemInvalid},
	} {
		r, err := s.Test(context.Background(), c.what, c.given)
		if err != nil || r.OK || r.Problem != c.problem || r.Detail == "" {
			t.Errorf("test %s %v: %+v %v; want %q", c.what, c.given, r, err, c.problem)
		}
	}
	if _, err := s.Test(context.Background(), "tts", map[string]string{"tts-voce": "x"}); hub.ErrorCode(err) != hub.EINVALID || !strings.Contains(err.Error(), "did you mean tts-voice?") {
		t.Errorf("an unknown setting in a test: %v", err)
	}
}

// The recognition test sends what turns send: with asr-audio ogg-opus an
// Ogg Opus file, so that a server that takes only WAV (whisper.cpp's
// without ffmpeg) fails the test rather than the first turn.
func TestASRTestSendsTheTurnsFormat(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f, hdr, err := r.FormFile("file")
		if err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		b, _ := io.ReadAll(f)
		if strings.HasSuffix(hdr.Filename, ".ogg") {
			if s, err := ogg.Read(b); err != nil || len(s.Packets) != 9 {
				t.Errorf("the test's Ogg file: %v", err)
			}
			http.Error(w, `{"error":{"message":"failed to read audio data"}}`, 400) // a server without Ogg
			return
		}
		w.Write([]byte(`{"text":""}`))
	}))
	defer srv.Close()
	s, err := livesettings.Open(context.Background(), livesettings.Options{Store: openStore(t, t.TempDir()), Base: base()})
	if err != nil {
		t.Fatal(err)
	}
	set := map[string]string{"asr-provider": "openai", "asr-base-url": srv.URL}
	if r, err := s.Test(context.Background(), "asr", set); err != nil || !r.OK {
		t.Fatalf("wav: %+v %v", r, err)
	}
	set["asr-audio"] = "ogg-opus"
	if r, err := s.Test(context.Background(), "asr", set); err != nil || r.OK || !strings.Contains(r.Detail, "failed to read audio data") {
		t.Fatalf("ogg-opus to a server without Ogg: %+v %v", r, err)
	}
}
