package api

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/xiaozhi-hub/hub"
)

// Settings are the settings the admin changes while the hub runs
// (livesettings.Service): the agent's model, speech recognition and
// synthesis, the conversation timeout, named as in the config file.
type Settings interface {
	// View is every live setting with its source; keys only as set or not.
	View() map[string]hub.SettingView
	// Set stores and applies changes (nil: remove the stored value); an
	// unknown name or a bad value is EINVALID, a flag's ECONFLICT.
	Set(ctx context.Context, changes map[string]*string) (map[string]hub.SettingView, error)
	// Test makes the smallest real request to "agent", "asr" or "tts"
	// with the current settings, or given applied over them.
	Test(ctx context.Context, what string, given map[string]string) (hub.SettingsTest, error)

	// HomeView, SetHome and TestHome are the same for a home's own
	// settings (its agent and voices, with its owner's keys), which fall
	// back to the hub's; ForgetHome drops a deleted home's.
	HomeView(home string) map[string]hub.SettingView
	SetHome(ctx context.Context, home string, changes map[string]*string) (map[string]hub.SettingView, error)
	TestHome(ctx context.Context, home, what string, given map[string]string) (hub.SettingsTest, error)
	ForgetHome(home string)
}

// settingsRoutes are always listed: without Options.Settings they answer
// 503 saying so.
func (s *Server) settingsRoutes() []route {
	return []route{
		{"/api/settings", []methodHandler{{"GET", s.needSettings(s.getSettings)}, {"PUT", s.needSettings(s.putSettings)}}},
		{"/api/settings/test", []methodHandler{{"POST", s.needSettings(s.testSettings)}}},
	}
}

func init() {
	for k, o := range map[string]op{
		"GET /api/settings": {summary: "The settings the admin changes while the hub runs (agent, speech, conversation timeout), named as in the config file, with where each value comes from (default, file, env, stored, flag); keys only as set or not (admin)",
			answer: `{"settings":{"agent-provider":{"value":"openai","source":"file"},"tts-api-key":{"set":true,"updated":"…","source":"stored"},…}}`},
		"PUT /api/settings": {summary: "Store and apply settings from the next turn on, without a restart (admin); null removes a stored value; a value fixed by a flag is 409",
			body: `{"tts-voice":"nova","tts-api-key":"sk-…","agent-model":null}`, answer: `{"settings":{…}} as GET`},
		"GET /api/homes/{home}/settings": {summary: "A home's own settings (owner or admin): the agent and voices for the home's devices, with its owner's keys; each value's source is home (set here) or hub (the hub's, which applies); the hub's keys and addresses only as set or not",
			answer: `{"settings":{"tts-voice":{"value":"nova","source":"home"},"tts-api-key":{"set":true,"source":"hub"},…}}`},
		"PUT /api/homes/{home}/settings": {summary: "Store and apply a home's own settings from its devices' next turn on (owner or admin); null removes the home's value, so the hub's applies; conversation-timeout is the hub's; a provider or address of the home's own never gets the hub's key, and reaches only public addresses",
			body: `{"tts-voice":"nova","agent-provider":"openai","agent-api-key":"sk-…"}`, answer: `{"settings":{…}} as GET`},
		"POST /api/homes/{home}/settings/test": {summary: "The test of POST /api/settings/test with the home's settings (owner or admin)",
			body: `{"what":"agent|asr|tts","settings":{"tts-api-key":"sk-…"}}`, answer: `{"what":"tts","ok":false,"problem":"wrong key","detail":"…"}`},
		"POST /api/settings/test": {summary: "Make the smallest real request to the agent's model, recognition or synthesis with the current settings (or with settings given over them) and say what failed (admin)",
			body: `{"what":"agent|asr|tts","settings":{"agent-api-key":"sk-…"}}`, answer: `{"what":"tts","ok":false,"problem":"wrong key|unreachable|unknown model|wrong address|not configured|invalid settings|failed","detail":"…"}`},
	} {
		operations[k] = o
	}
}

// needSettings answers 503 while the hub has no live settings, and 403 to
// anyone but the admin.
func (s *Server) needSettings(h http.HandlerFunc) http.HandlerFunc {
	return s.unlessMissing(s.settings == nil, "live settings", func(w http.ResponseWriter, r *http.Request) {
		if !principal(r).Admin {
			s.fail(w, r, hub.Errorf(hub.EFORBIDDEN, "only the admin reads and changes the hub's settings"))
			return
		}
		h(w, r)
	})
}

type settingsBody struct {
	Settings map[string]hub.SettingView `json:"settings"`
}

func (s *Server) getSettings(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, settingsBody{s.settings.View()})
}

var settingsSpec = bodySpec{shape: `{"tts-voice":"nova"}`, limit: 32 << 10}

func (s *Server) putSettings(w http.ResponseWriter, r *http.Request) {
	s.changeSettings(w, r, s.settings.Set)
}

// changeSettings answers a PUT of settings, applied by set (the hub's or
// a home's).
func (s *Server) changeSettings(w http.ResponseWriter, r *http.Request, set func(context.Context, map[string]*string) (map[string]hub.SettingView, error)) {
	changes, err := settingChanges(w, r)
	var view map[string]hub.SettingView
	if err == nil {
		view, err = set(r.Context(), changes)
	}
	s.answer(w, r, settingsBody{view}, err)
}

// settingChanges reads a PUT body of settings: names with string values,
// or null to remove a stored value.
func settingChanges(w http.ResponseWriter, r *http.Request) (map[string]*string, error) {
	var raw map[string]json.RawMessage
	if err := decodeBody(w, r, &raw, settingsSpec, false); err != nil {
		return nil, err
	}
	changes := make(map[string]*string, len(raw))
	for name, v := range raw {
		if string(v) == "null" {
			changes[name] = nil
			continue
		}
		var str string
		if err := json.Unmarshal(v, &str); err != nil {
			return nil, hub.Errorf(hub.EINVALID, "%s: the value must be a string (a duration as \"90s\"), or null to remove the stored value", hub.Truncate([]byte(name), 64))
		}
		changes[name] = &str
	}
	return changes, nil
}

var settingsTestSpec = bodySpec{
	kinds: fieldKinds{"what": "a string: agent, asr or tts", "settings": "an object of settings and string values"},
	shape: `{"what":"tts"}`, limit: 32 << 10,
}

// settingsTestBody is the body of a settings test.
type settingsTestBody struct {
	What     string            `json:"what"`
	Settings map[string]string `json:"settings"`
}

func (s *Server) testSettings(w http.ResponseWriter, r *http.Request) {
	s.testWith(w, r, s.settings.Test)
}

// testWith answers a settings test, made by test (the hub's or a home's).
func (s *Server) testWith(w http.ResponseWriter, r *http.Request, test func(ctx context.Context, what string, given map[string]string) (hub.SettingsTest, error)) {
	var body settingsTestBody
	err := decodeBody(w, r, &body, settingsTestSpec, false)
	var res hub.SettingsTest
	if err == nil {
		res, err = test(r.Context(), body.What, body.Settings)
	}
	s.answer(w, r, res, err)
}

// homeSettings answers 503 while the hub has no live settings, and lets
// only the home's owners and the admin on (a home the caller is not in is
// the unknown home's 404).
func (s *Server) homeSettings(h http.HandlerFunc) http.HandlerFunc {
	return s.unlessMissing(s.settings == nil, "live settings", func(w http.ResponseWriter, r *http.Request) {
		if err := s.accounts.RequireRole(principal(r), r.PathValue("home"), hub.RoleOwner, "read or change its settings"); err != nil {
			s.fail(w, r, err)
			return
		}
		h(w, r)
	})
}

func (s *Server) getHomeSettings(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, settingsBody{s.settings.HomeView(r.PathValue("home"))})
}

func (s *Server) putHomeSettings(w http.ResponseWriter, r *http.Request) {
	home := r.PathValue("home")
	s.changeSettings(w, r, func(ctx context.Context, changes map[string]*string) (map[string]hub.SettingView, error) {
		return s.settings.SetHome(ctx, home, changes)
	})
}

func (s *Server) testHomeSettings(w http.ResponseWriter, r *http.Request) {
	home := r.PathValue("home")
	s.testWith(w, r, func(ctx context.Context, what string, given map[string]string) (hub.SettingsTest, error) {
		return s.settings.TestHome(ctx, home, what, given)
	})
}
