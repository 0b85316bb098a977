package api

import (
	"net/http"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/internal/ratelimit"
)

// Homes, their members and their devices (Options.Accounts; binding by
// activation code also needs Options.Trust).

func (s *Server) homeRoutes() []route {
	if s.accounts == nil {
		return nil
	}
	return []route{
		{"/api/homes", []methodHandler{{"GET", s.listHomes}, {"POST", s.createHome}}},
		{"/api/homes/{home}", []methodHandler{{"GET", s.getHome}, {"PATCH", s.renameHome}, {"DELETE", s.deleteHome}}},
		{"/api/homes/{home}/members", []methodHandler{{"POST", s.setMember}}},
		{"/api/homes/{home}/members/{user}", []methodHandler{{"DELETE", s.removeMember}}},
		{"/api/homes/{home}/devices", []methodHandler{{"POST", s.bindDevice}}},
		{"/api/homes/{home}/devices/{id}", []methodHandler{{"DELETE", s.unbindDevice}}},
		{"/api/homes/{home}/settings", []methodHandler{{"GET", s.homeSettings(s.getHomeSettings)}, {"PUT", s.homeSettings(s.putHomeSettings)}}},
		{"/api/homes/{home}/settings/test", []methodHandler{{"POST", s.homeSettings(s.testHomeSettings)}}},
	}
}

// counted fills in how many devices each home has.
func (s *Server) counted(p *hub.Principal, homes ...hub.HomeView) []hub.HomeView {
	n := map[string]int{}
	for _, d := range s.reg.DevicesOf(p) {
		n[d.Home]++
	}
	for i := range homes {
		homes[i].Devices = n[homes[i].ID]
	}
	return homes
}

// writeHome answers 200 (or status) with home id as p sees it.
func (s *Server) writeHome(w http.ResponseWriter, r *http.Request, status int, v hub.HomeView, err error) {
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, status, s.counted(principal(r), v)[0])
}

func (s *Server) listHomes(w http.ResponseWriter, r *http.Request) {
	p := principal(r)
	writeJSON(w, http.StatusOK, map[string]any{"homes": s.counted(p, s.accounts.Homes(p)...)})
}

var homeSpec = bodySpec{kinds: fieldKinds{"name": "a string"}, shape: `{"name":"A家"}`, limit: 4 << 10}

func (s *Server) homeName(w http.ResponseWriter, r *http.Request) (string, error) {
	var body struct {
		Name string `json:"name"`
	}
	err := decodeBody(w, r, &body, homeSpec, false)
	return body.Name, err
}

// createHome answers POST /api/homes {"name"}: 201 the home, whose owner
// the caller is (a user; the admin token is no user).
func (s *Server) createHome(w http.ResponseWriter, r *http.Request) {
	name, err := s.homeName(w, r)
	var v hub.HomeView
	if err == nil {
		v, err = s.accounts.CreateHome(r.Context(), principal(r), name)
	}
	s.writeHome(w, r, http.StatusCreated, v, err)
}

func (s *Server) getHome(w http.ResponseWriter, r *http.Request) {
	v, err := s.accounts.Home(principal(r), r.PathValue("home"))
	s.writeHome(w, r, http.StatusOK, v, err)
}

// renameHome answers PATCH /api/homes/{home} {"name"} (owner).
func (s *Server) renameHome(w http.ResponseWriter, r *http.Request) {
	name, err := s.homeName(w, r)
	var v hub.HomeView
	if err == nil {
		v, err = s.accounts.RenameHome(r.Context(), principal(r), r.PathValue("home"), name)
	}
	s.writeHome(w, r, http.StatusOK, v, err)
}

// deleteHome answers DELETE /api/homes/{home} with 204 (owner); 409 while
// devices are in it.
func (s *Server) deleteHome(w http.ResponseWriter, r *http.Request) {
	p, id := principal(r), r.PathValue("home")
	err := s.accounts.RequireRole(p, id, hub.RoleOwner, "delete it")
	if err == nil {
		if n := s.counted(p, hub.HomeView{ID: id})[0].Devices; n > 0 {
			err = hub.Errorf(hub.ECONFLICT, "the home still has %d devices: remove them first (DELETE /api/homes/%s/devices/{device})", n, id)
		}
	}
	if err == nil {
		err = s.accounts.DeleteHome(r.Context(), p, id)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if s.settings != nil {
		s.settings.ForgetHome(id) // the store removed them with the home
	}
	w.WriteHeader(http.StatusNoContent)
}

var memberSpec = bodySpec{
	kinds: fieldKinds{"user": "a string", "role": "a string"},
	shape: `{"user":"bob","role":"member"}`,
	limit: 4 << 10,
}

// setMember answers POST /api/homes/{home}/members {"user","role"} (owner):
// 200 the home with its members.
func (s *Server) setMember(w http.ResponseWriter, r *http.Request) {
	var body struct {
		User string   `json:"user"`
		Role hub.Role `json:"role"`
	}
	p, id := principal(r), r.PathValue("home")
	err := decodeBody(w, r, &body, memberSpec, false)
	if err == nil {
		err = s.accounts.SetMember(r.Context(), p, id, body.User, body.Role)
	}
	var v hub.HomeView
	if err == nil {
		v, err = s.accounts.Home(p, id)
	}
	s.writeHome(w, r, http.StatusOK, v, err)
}

// removeMember answers DELETE /api/homes/{home}/members/{user} with 204:
// an owner removes anyone, anyone may leave. Their access to the home's
// devices ends at once, open event streams included.
func (s *Server) removeMember(w http.ResponseWriter, r *http.Request) {
	if err := s.accounts.RemoveMember(r.Context(), principal(r), r.PathValue("home"), r.PathValue("user")); err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

var bindSpec = bodySpec{
	kinds: fieldKinds{"code": "a string", "device": "a string"},
	shape: `{"code":"123456"}`,
	limit: 1 << 10,
}

// bindLimit bounds how often one person may try activation codes: a
// burst of 10, then one every 6 s, so that nobody finds another's waiting
// device by trying codes.
type bindLimit struct {
	mu   sync.Mutex
	keys *ratelimit.Keyed[struct{}]
}

func newBindLimit() *bindLimit {
	return &bindLimit{keys: ratelimit.NewKeyed[struct{}](rate.Every(6*time.Second), 10, 0)}
}

func (b *bindLimit) take(key string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if ok, wait := ratelimit.Take(&b.keys.Get(key, time.Now()).Limiter, time.Now()); !ok {
		e := hub.Errorf(hub.ETOOMANY, "too many activation codes tried; try again in %d s", int(wait/time.Second)+1)
		e.RetryAfter = wait
		return e
	}
	return nil
}

// bindDevice answers POST /api/homes/{home}/devices (owner or member):
// {"code":"123456"} approves the waiting device showing that code into
// the home; the admin may send {"device":"<id>"} to move any device there.
// It answers 200 with the device.
func (s *Server) bindDevice(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Code   string `json:"code"`
		Device string `json:"device"`
	}
	p, home := principal(r), r.PathValue("home")
	if err := decodeBody(w, r, &body, bindSpec, false); err != nil {
		s.fail(w, r, err)
		return
	}
	if err := s.accounts.RequireRole(p, home, hub.RoleMember, "add devices to it"); err != nil {
		s.fail(w, r, err)
		return
	}
	var id string
	var err error
	switch {
	case (body.Code == "") == (body.Device == ""):
		err = hub.Errorf(hub.EBADREQUEST, `send either {"code":"<the code the device shows>"} or, with the admin token, {"device":"<id>"}`)
	case body.Device != "" && !p.Admin:
		err = hub.Errorf(hub.EFORBIDDEN, "only the admin token moves a device by its id; add a new device by the code it shows")
	case body.Device != "":
		id = hub.NormalizeDeviceID(body.Device)
	default:
		id, err = s.approveCode(r, p, body.Code)
	}
	var d hub.Device
	if err == nil {
		d, err = s.reg.UpdateDevice(r.Context(), id, hub.DevicePatch{Home: &home})
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.log.Info("device added to a home", "device", id, "home", home, "by", p.Actor())
	writeJSON(w, http.StatusOK, d)
}

// approveCode approves the waiting device showing code (Trust.Approve)
// and returns its id.
func (s *Server) approveCode(r *http.Request, p *hub.Principal, code string) (string, error) {
	if s.trust == nil {
		return "", hub.Errorf(hub.EUNAVAILABLE, "this hub does not give devices activation codes")
	}
	if err := s.binds.take(p.User); err != nil {
		return "", err
	}
	a, _, err := s.trust.Approve(r.Context(), code, hub.DevicePatch{})
	if err != nil {
		return "", err
	}
	s.log.Info("device approved by its code", "device", a.DeviceID, "by", p.Actor())
	// A device already in a home the caller may not add devices to stays
	// there: its owner removes it first (or the admin moves it).
	if d, err := s.reg.Device(a.DeviceID); err == nil && d.Home != "" && !p.RoleIn(d.Home).AtLeast(hub.RoleMember) {
		return "", hub.Errorf(hub.ECONFLICT, "the device showing this code belongs to another home: its owner removes it from there first")
	}
	return a.DeviceID, nil
}

// unbindDevice answers DELETE /api/homes/{home}/devices/{id} with 204
// (owner): the device leaves the home and is then the admin's alone.
func (s *Server) unbindDevice(w http.ResponseWriter, r *http.Request) {
	d, err := s.seenDevice(r, hub.RoleOwner, "remove it from its home")
	if err == nil { // a device of another home is, in this one, unknown
		in := &hub.Principal{Homes: map[string]hub.Role{r.PathValue("home"): hub.RoleOwner}}
		_, err = s.reg.DeviceAs(in, d.ID)
	}
	if err == nil {
		none := ""
		_, err = s.reg.UpdateDevice(r.Context(), d.ID, hub.DevicePatch{Home: &none})
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
