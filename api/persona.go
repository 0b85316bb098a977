package api

import (
	"context"
	"net/http"

	"github.com/xiaozhi-hub/hub"
)

// Personas are the assistant's persona per device and per home, and its
// memory per device (persona.Service), with the rights of the asker: a
// device or home the asker does not see is the unknown one, guests are
// refused.
type Personas interface {
	DevicePersona(ctx context.Context, p *hub.Principal, id string) (hub.PersonaView, error)
	SetDevicePersona(ctx context.Context, p *hub.Principal, id string, v hub.Persona) (hub.PersonaView, error)
	HomePersona(ctx context.Context, p *hub.Principal, id string) (hub.PersonaView, error)
	SetHomePersona(ctx context.Context, p *hub.Principal, id string, v hub.Persona) (hub.PersonaView, error)
	Memory(ctx context.Context, p *hub.Principal, id string) (hub.Memory, error)
	ClearMemory(ctx context.Context, p *hub.Principal, id string) error
}

// personaRoutes are always listed: without Options.Personas they answer
// 503 saying so.
func (s *Server) personaRoutes() []route {
	return []route{
		{"/api/devices/{id}/persona", []methodHandler{{"GET", s.needPersonas(s.getDevicePersona)}, {"PUT", s.needPersonas(s.putDevicePersona)}}},
		{"/api/homes/{id}/persona", []methodHandler{{"GET", s.needPersonas(s.getHomePersona)}, {"PUT", s.needPersonas(s.putHomePersona)}}},
		{"/api/devices/{id}/memory", []methodHandler{{"GET", s.needPersonas(s.getMemory)}, {"DELETE", s.needPersonas(s.deleteMemory)}}},
	}
}

func init() {
	persona := `{"persona":{"name","role","language","voice","greeting","updated"},"home":{…the home's, devices only},"effective":{…what applies}}`
	for k, o := range map[string]op{
		"GET /api/devices/{id}/persona": {summary: "The assistant's persona on a device: its own, its home's and the one that applies (owner or member of its home)", answer: persona},
		"PUT /api/devices/{id}/persona": {summary: "Set the assistant's persona on a device; empty fields inherit the home's, then the defaults (owner or member)",
			body: `{"name":"小智","role":"你是…","language":"zh","voice":"nova","greeting":"你好"}`, answer: persona},
		"GET /api/homes/{id}/persona": {summary: "The persona a home's devices inherit (owner or member)", answer: persona},
		"PUT /api/homes/{id}/persona": {summary: "Set the persona a home's devices inherit (owner or member)",
			body: `{"name":"Jarvis","role":"You are …","language":"en","voice":"","greeting":"Hello"}`, answer: persona},
		"GET /api/devices/{id}/memory":    {summary: "What the assistant remembers of a device's conversations (written by the model after each; owner or member)", answer: `{"device":"…","text":"…","updated":"…"}`},
		"DELETE /api/devices/{id}/memory": {summary: "Forget what the assistant remembers of a device's conversations (owner or member)", status: "204", answer: "nothing"},
	} {
		operations[k] = o
	}
}

// needPersonas answers 503 while the hub has no personas.
func (s *Server) needPersonas(h http.HandlerFunc) http.HandlerFunc {
	return s.unlessMissing(s.personas == nil, "personas", h)
}

var personaSpec = bodySpec{
	kinds: fieldKinds{"name": "a string", "role": "a string", "language": "a string", "voice": "a string", "greeting": "a string"},
	shape: `{"name":"小智","role":"…","language":"zh","voice":"","greeting":"你好"}`,
	limit: 32 << 10,
}

// readPersona decodes a persona body (updated is the hub's to set).
func (s *Server) readPersona(w http.ResponseWriter, r *http.Request) (hub.Persona, bool) {
	var body struct {
		Name     string `json:"name"`
		Role     string `json:"role"`
		Language string `json:"language"`
		Voice    string `json:"voice"`
		Greeting string `json:"greeting"`
	}
	if err := decodeBody(w, r, &body, personaSpec, false); err != nil {
		s.fail(w, r, err)
		return hub.Persona{}, false
	}
	return hub.Persona{Name: body.Name, Role: body.Role, Language: body.Language, Voice: body.Voice, Greeting: body.Greeting}, true
}

func (s *Server) getDevicePersona(w http.ResponseWriter, r *http.Request) {
	v, err := s.personas.DevicePersona(r.Context(), principal(r), r.PathValue("id"))
	s.answer(w, r, v, err)
}

func (s *Server) putDevicePersona(w http.ResponseWriter, r *http.Request) {
	if p, ok := s.readPersona(w, r); ok {
		v, err := s.personas.SetDevicePersona(r.Context(), principal(r), r.PathValue("id"), p)
		s.answer(w, r, v, err)
	}
}

func (s *Server) getHomePersona(w http.ResponseWriter, r *http.Request) {
	v, err := s.personas.HomePersona(r.Context(), principal(r), r.PathValue("id"))
	s.answer(w, r, v, err)
}

func (s *Server) putHomePersona(w http.ResponseWriter, r *http.Request) {
	if p, ok := s.readPersona(w, r); ok {
		v, err := s.personas.SetHomePersona(r.Context(), principal(r), r.PathValue("id"), p)
		s.answer(w, r, v, err)
	}
}

func (s *Server) getMemory(w http.ResponseWriter, r *http.Request) {
	m, err := s.personas.Memory(r.Context(), principal(r), r.PathValue("id"))
	s.answer(w, r, m, err)
}

func (s *Server) deleteMemory(w http.ResponseWriter, r *http.Request) {
	if err := s.personas.ClearMemory(r.Context(), principal(r), r.PathValue("id")); err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
