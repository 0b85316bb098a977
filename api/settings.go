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
		"POST /api/settings/test": {summary: "Make the smallest real request to the agent's model, recognition or synthesis with the current settings (or with settings given over them) and say what failed (admin)",
			body: `{"what":"agent|asr|tts","settings":{"agent-api-key":"sk-…"}}`, answer: `{"what":"tts","ok":false,"problem":"wrong key|unreachable|unknown model|wrong address|not configured|invalid settings|failed","detail":"…"}`},
	} {
		operations[k] = o
	}
}

// needSettings answers 503 while the hub has no live settings, and 403 to
// anyone but the admin.
func (s *Server) needSettings(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.settings == nil {
			s.fail(w, r, hub.Errorf(hub.EUNAVAILABLE, "live settings are not set up on this hub"))
			return
		}
		if !principal(r).Admin {
			s.fail(w, r, hub.Errorf(hub.EFORBIDDEN, "only the admin reads and changes the hub's settings"))
			return
		}
		h(w, r)
	}
}

type settingsBody struct {
	Settings map[string]hub.SettingView `json:"settings"`
}

func (s *Server) getSettings(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, settingsBody{s.settings.View()})
}

var settingsSpec = bodySpec{shape: `{"tts-voice":"nova"}`, limit: 32 << 10}

func (s *Server) putSettings(w http.ResponseWriter, r *http.Request) {
	var raw map[string]json.RawMessage
	if err := decodeBody(w, r, &raw, settingsSpec, false); err != nil {
		s.fail(w, r, err)
		return
	}
	changes := make(map[string]*string, len(raw))
	for name, v := range raw {
		if string(v) == "null" {
			changes[name] = nil
			continue
		}
		var str string
		if err := json.Unmarshal(v, &str); err != nil {
			s.fail(w, r, hub.Errorf(hub.EINVALID, "%s: the value must be a string (a duration as \"90s\"), or null to remove the stored value", hub.Truncate([]byte(name), 64)))
			return
		}
		changes[name] = &str
	}
	view, err := s.settings.Set(r.Context(), changes)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, settingsBody{view})
}

var settingsTestSpec = bodySpec{
	kinds: fieldKinds{"what": "a string: agent, asr or tts", "settings": "an object of settings and string values"},
	shape: `{"what":"tts"}`, limit: 32 << 10,
}

func (s *Server) testSettings(w http.ResponseWriter, r *http.Request) {
	var body struct {
		What     string            `json:"what"`
		Settings map[string]string `json:"settings"`
	}
	if err := decodeBody(w, r, &body, settingsTestSpec, false); err != nil {
		s.fail(w, r, err)
		return
	}
	res, err := s.settings.Test(r.Context(), body.What, body.Settings)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}
