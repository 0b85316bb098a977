package dashboard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/coder/websocket"

	"github.com/xiaozhi-hub/hub/opus"
	"github.com/xiaozhi-hub/hub/server"
	"github.com/xiaozhi-hub/hub/server/servertest"
	"github.com/xiaozhi-hub/hub/sim"
)

// standIn stands in for an OpenAI-compatible provider at the edge, over
// its wire formats: transcription ("Hello."), a streamed chat answer
// ("Hi.") and speech (PCM), for the key sk-live; OpenAI's 401 for any
// other. It records the voice of each synthesis.
type standIn struct {
	srv    *httptest.Server
	mu     sync.Mutex
	voices []string
}

func newStandIn(t *testing.T) *standIn {
	s := &standIn{}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer sk-live" {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"error":{"message":"Incorrect API key provided: sk-w***.","type":"invalid_request_error","code":"invalid_api_key"}}`)
			return
		}
		switch r.URL.Path {
		case "/v1/audio/transcriptions":
			fmt.Fprint(w, `{"text":"Hello."}`)
		case "/v1/chat/completions":
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "data: {\"choices\":[{\"delta\":{\"content\":\"Hi.\"}}]}\n\ndata: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
		case "/v1/audio/speech":
			var req struct{ Voice string }
			_ = json.NewDecoder(r.Body).Decode(&req)
			s.mu.Lock()
			s.voices = append(s.voices, req.Voice)
			s.mu.Unlock()
			w.Header().Set("Content-Type", "audio/pcm")
			_, _ = w.Write(make([]byte, 4800))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *standIn) lastVoice() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.voices) == 0 {
		return ""
	}
	return s.voices[len(s.voices)-1]
}

// talker is a device that talks: a raw WebSocket connection, as the
// firmware's, whose person presses the button, speaks and lets go.
func talker(t *testing.T, h *server.Hub, id string) *websocket.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	hdr := http.Header{"Device-Id": {id}, "Client-Id": {"raw-" + id}, "Protocol-Version": {"1"}}
	c, _, err := websocket.Dial(ctx, h.DeviceURL(), &websocket.DialOptions{HTTPHeader: hdr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.CloseNow() })
	c.SetReadLimit(1 << 20)
	if err := c.Write(ctx, websocket.MessageText, []byte(`{"type":"hello","version":1,"transport":"websocket","audio_params":{"format":"opus","sample_rate":16000,"channels":1,"frame_duration":60}}`)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Read(ctx); err != nil {
		t.Fatal(err)
	}
	return c
}

// speak has the person say something to c and waits for tts stop.
func speak(t *testing.T, c *websocket.Conn) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	enc, err := opus.NewEncoder(16000, 60)
	if err != nil {
		t.Fatal(err)
	}
	write := func(typ websocket.MessageType, b []byte) {
		if err := c.Write(ctx, typ, b); err != nil {
			t.Fatal(err)
		}
	}
	write(websocket.MessageText, []byte(`{"session_id":"s","type":"listen","state":"start","mode":"manual"}`))
	for n := range 20 {
		pcm := make([]int16, 960)
		for i := range pcm {
			pcm[i] = int16(5000 * math.Sin(2*math.Pi*180*float64(n*960+i)/16000))
		}
		pkt, err := enc.Encode(pcm)
		if err != nil {
			t.Fatal(err)
		}
		write(websocket.MessageBinary, pkt)
	}
	write(websocket.MessageText, []byte(`{"session_id":"s","type":"listen","state":"stop"}`))
	for {
		typ, data, err := c.Read(ctx)
		if err != nil {
			t.Fatalf("the spoken turn: %v", err)
		}
		if typ == websocket.MessageText && strings.Contains(string(data), `"state":"stop"`) {
			return
		}
	}
}

// The admin's Settings section, in English at desktop width and in
// Chinese at phone width: each value with its source, keys only as set; a
// changed tts-voice is stored and applied (the hub's effective settings,
// which the next spoken turn uses: server TestLiveSettingsApplyToTheNextTurn);
// a wrong key typed into the page fails its test in the page's language,
// and nothing typed for a test is stored. A device's persona and memory
// in its detail.
func TestBrowserSettingsPersonaAndMemory(t *testing.T) {
	for _, c := range []struct {
		lang, saved, wrongKey, stored, forgotten, home string
		width                                          int
	}{
		{"en-US", "saved: used from the next turn", "wrong key", "set here", "forgotten", "this home's", 1280},
		{"zh-CN", "已保存：下一轮对话起生效", "密钥错误", "在此设置", "已忘记", "本家庭", 390},
	} {
		t.Run(c.lang, func(t *testing.T) {
			s := newStandIn(t)
			h := startHub(t, func(cfg *server.Config) {
				base := s.srv.URL + "/v1"
				cfg.AgentProvider, cfg.AgentBaseURL, cfg.AgentAPIKey, cfg.AgentModel = "openai", base, "sk-live", "m"
				cfg.ASRProvider, cfg.ASRBaseURL, cfg.ASRAPIKey = "openai", base, "sk-live"
				cfg.TTSProvider, cfg.TTSBaseURL, cfg.TTSAPIKey, cfg.TTSVoice = "openai", base, "sk-live", "alloy"
			})
			// A device already in a conversation, spoken to in the file's voice.
			voiceDevice := talker(t, h, "aa:00:00:00:5a:02")
			speak(t, voiceDevice)
			if v := s.lastVoice(); v != "alloy" {
				t.Fatalf("the first turn was spoken in %q", v)
			}
			const id = "aa:00:00:00:5a:01"
			connect(t, h, sim.Config{DeviceID: id, Lamp: true})
			b := newBrowser(t, h.URL(), c.width, c.lang)
			b.login()
			b.waitJS("the settings", `document.querySelector("#set-tts-voice") && document.querySelector("#set-tts-voice").value === "alloy"`)
			var page struct {
				Hidden     bool
				KeyType    string
				KeyValue   string
				KeyHolder  string
				HTML       string
				FileSource string
			}
			b.eval(`({hidden: document.querySelector("#settingsBox").hidden, keyType: document.querySelector("#set-tts-api-key").type,
				keyValue: document.querySelector("#set-tts-api-key").value, keyHolder: document.querySelector("#set-tts-api-key").placeholder,
				html: document.documentElement.outerHTML, fileSource: document.querySelector('#set-tts-voice').closest("label").querySelector(".source").dataset.source})`, &page)
			if page.Hidden || page.KeyType != "password" || page.KeyValue != "" || page.KeyHolder == "" || strings.Contains(page.HTML, "sk-live") || page.FileSource != "file" {
				t.Fatalf("the settings page: hidden %v, key %q %q %q, source %q, key in page %v", page.Hidden, page.KeyType, page.KeyValue, page.KeyHolder, page.FileSource, strings.Contains(page.HTML, "sk-live"))
			}

			// A wrong key typed and tested: the page says so; it is not stored.
			b.run(chromedp.SendKeys("#set-tts-api-key", "sk-wrong", chromedp.ByQuery),
				chromedp.Click(`button.test[data-what="tts"]`, chromedp.ByQuery))
			b.waitJS("the test's answer", `document.querySelector('.test-out[data-what="tts"]').dataset.problem === "wrong key"`)
			var said string
			b.eval(`document.querySelector('.test-out[data-what="tts"]').textContent`, &said)
			if !strings.HasPrefix(said, c.wrongKey) || !strings.Contains(said, "Incorrect API key") {
				t.Fatalf("the wrong key's test says %q", said)
			}
			b.shot("settings-wrong-key")
			checkFits(t, b, c.width)
			b.run(chromedp.Evaluate(`(() => { const i = document.querySelector("#set-tts-api-key"); i.value = ""; delete i.dataset.dirty; })()`, nil))

			// A new voice, saved: stored and in force.
			b.run(chromedp.Evaluate(`document.querySelector("#set-tts-voice").value = ""`, nil), chromedp.SendKeys("#set-tts-voice", "nova", chromedp.ByQuery),
				chromedp.Click(`#settingsForm > .row.end button`, chromedp.ByQuery))
			b.waitJS("saved", `document.querySelector("#settingsOut").textContent === `+jsString(c.saved))
			b.waitJS("the source", `document.querySelector('#set-tts-voice').closest("label").querySelector(".source").textContent === `+jsString(c.stored))
			_, body := apiAs(t, h, servertest.Token, "GET", "/api/settings", nil)
			v := body["settings"].(map[string]any)["tts-voice"].(map[string]any)
			k := body["settings"].(map[string]any)["tts-api-key"].(map[string]any)
			if v["value"] != "nova" || v["source"] != "stored" || k["source"] != "file" {
				t.Fatalf("after saving: tts-voice %v, tts-api-key %v", v, k)
			}
			// The next spoken turn of the same conversation uses it: no restart.
			speak(t, voiceDevice)
			if v := s.lastVoice(); v != "nova" {
				t.Fatalf("the turn after the change was spoken in %q, want nova", v)
			}

			// The device's persona and memory, in its detail.
			b.run(chromedp.Click(`li.device[data-id="`+id+`"]`, chromedp.ByQuery))
			b.waitJS("the persona form", `document.querySelector(".assistant input.persona-name") && document.querySelector(".assistant input.persona-name").placeholder !== ""`)
			b.run(chromedp.SendKeys(".assistant input.persona-name", "阿福", chromedp.ByQuery),
				chromedp.Click(".assistant form.persona button", chromedp.ByQuery))
			b.waitJS("the persona saved", `document.querySelector(".persona-out").textContent !== ""`)
			p := mustAs(t, h, servertest.Token, "GET", "/api/devices/"+id+"/persona", nil)
			if p["persona"].(map[string]any)["name"] != "阿福" {
				t.Fatalf("persona after saving: %v", p)
			}
			b.waitJS("the memory", `document.querySelector(".memory-text").textContent !== ""`)
			b.shot("persona")
			checkFits(t, b, c.width)
			b.run(chromedp.Click(".assistant button.forget", chromedp.ByQuery))
			b.waitJS("the confirmation", `document.querySelector("#confirm").open`)
			b.run(chromedp.Click(`#confirmOk`, chromedp.ByQuery))
			b.waitJS("forgotten", `document.querySelector(".memory-out").textContent === `+jsString(c.forgotten))

			// A home's persona, inherited by its devices, in the home's panel.
			homeID := home(t, h, person(t, h, "alice"), "A")
			b.waitJS("the home listed", `document.querySelector('#homeSel option[value="`+homeID+`"]')`)
			b.choose("#homeSel", homeID)
			b.waitJS("the home's persona form", `document.querySelector("#homePersona input.persona-voice") && document.querySelector("#homePersona input.persona-voice").placeholder === ""`)
			b.run(chromedp.SendKeys("#homePersona input.persona-voice", "nova", chromedp.ByQuery),
				chromedp.Click("#homePersona form.persona button", chromedp.ByQuery))
			b.waitJS("the home's persona saved", `document.querySelector("#homePersona .persona-out").textContent !== ""`)
			if p := mustAs(t, h, servertest.Token, "GET", "/api/homes/"+homeID+"/persona", nil); p["persona"].(map[string]any)["voice"] != "nova" {
				t.Fatalf("the home's persona after saving: %v", p)
			}
			b.shot("home-persona")
			checkFits(t, b, c.width)

			// The home's own model and voices, for its owners: a wrong key
			// of the home's is tested, a voice saved shows as the home's.
			b.run(chromedp.Click("#homePersona details.home-settings summary", chromedp.ByQuery))
			b.waitJS("the home's settings", `document.querySelector("#home-set-tts-voice") && document.querySelector("#home-set-tts-voice").closest("label").querySelector(".source").dataset.source === "hub"`)
			b.run(chromedp.SendKeys("#home-set-tts-api-key", "sk-wrong", chromedp.ByQuery),
				chromedp.Click(`#homeSettingsForm button.test[data-what="tts"]`, chromedp.ByQuery))
			b.waitJS("the home test's answer", `document.querySelector('#homeSettingsForm .test-out[data-what="tts"]').dataset.problem === "wrong key"`)
			b.eval(`document.querySelector('#homeSettingsForm .test-out[data-what="tts"]').textContent`, &said)
			if !strings.HasPrefix(said, c.wrongKey) {
				t.Fatalf("the home's wrong key's test says %q", said)
			}
			b.run(chromedp.Evaluate(`(() => { const i = document.querySelector("#home-set-tts-api-key"); i.value = ""; delete i.dataset.dirty; })()`, nil),
				chromedp.Evaluate(`document.querySelector("#home-set-tts-voice").value = ""`, nil), chromedp.SendKeys("#home-set-tts-voice", "shimmer", chromedp.ByQuery),
				chromedp.Click(`#homeSettingsForm > .row.end button`, chromedp.ByQuery))
			b.waitJS("the home's voice saved", `document.querySelector('#home-set-tts-voice').closest("label").querySelector(".source").textContent === `+jsString(c.home))
			hs := mustAs(t, h, servertest.Token, "GET", "/api/homes/"+homeID+"/settings", nil)["settings"].(map[string]any)
			if v := hs["tts-voice"].(map[string]any); v["value"] != "shimmer" || v["source"] != "home" {
				t.Fatalf("the home's tts-voice after saving: %v", v)
			}
			if k := hs["tts-api-key"].(map[string]any); k["source"] != "hub" {
				t.Fatalf("a tested key was stored: %v", k)
			}
			b.shot("home-settings")
			checkFits(t, b, c.width)
		})
	}
}
