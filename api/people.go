package api

import (
	"net/http"
	"time"

	"github.com/xiaozhi-hub/hub"
)

// The people of the hub (Options.Accounts): logging in and out, who the
// caller is, users (the admin's) and personal tokens. Homes, their members
// and their devices are homes.go's.

// publicRoutes are the /api routes that need no token: logging in.
func (s *Server) publicRoutes() []route {
	if s.accounts == nil {
		return nil
	}
	return []route{{"/api/login", []methodHandler{{"POST", s.login}}}}
}

func (s *Server) peopleRoutes() []route {
	if s.accounts == nil {
		return nil
	}
	return []route{
		{"/api/logout", []methodHandler{{"POST", s.logout}}},
		{"/api/me", []methodHandler{{"GET", s.me}}},
		{"/api/users", []methodHandler{{"GET", s.adminOnly("list users", s.listUsers)}, {"POST", s.adminOnly("make users", s.addUser)}}},
		{"/api/users/{name}", []methodHandler{{"DELETE", s.adminOnly("remove users", s.deleteUser)}}},
		{"/api/users/{name}/password", []methodHandler{{"PUT", s.setPassword}}},
		{"/api/tokens", []methodHandler{{"GET", s.listTokens}, {"POST", s.createToken}}},
		{"/api/tokens/{id}", []methodHandler{{"DELETE", s.revokeToken}}},
	}
}

var loginSpec = bodySpec{
	kinds: fieldKinds{"name": "a string", "password": "a string", "cookie": "a boolean"},
	shape: `{"name":"alice","password":"…","cookie":false}`,
	limit: 4 << 10,
}

// login answers POST /api/login {"name","password","cookie"?}: 200
// {"token","id","user","expires"}; with "cookie":true the token goes only
// into the HttpOnly cookie. A wrong password and an unknown name get the
// same 401; repeated failures 429 with Retry-After, counted by the
// client's address (behind trusted-proxies, the address the proxy names)
// and by name.
func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Name     string `json:"name"`
		Password string `json:"password"`
		Cookie   bool   `json:"cookie"`
	}
	if err := decodeBody(w, r, &body, loginSpec, false); err != nil {
		s.fail(w, r, err)
		return
	}
	if body.Cookie && r.Header.Get("Sec-Fetch-Site") == "cross-site" {
		s.fail(w, r, hub.Errorf(hub.EFORBIDDEN, "a page of another site may not log in to the hub"))
		return
	}
	secret, t, err := s.accounts.Login(r.Context(), body.Name, body.Password, hub.SourceKey(r.RemoteAddr))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := map[string]any{"id": t.ID, "user": body.Name, "expires": t.Expires}
	if body.Cookie {
		http.SetCookie(w, sessionCookie(r, secret, time.Until(t.Expires)))
	} else {
		out["token"] = secret
	}
	writeJSON(w, http.StatusOK, out)
}

// sessionCookie is the login cookie holding secret for maxAge (negative:
// delete it).
func sessionCookie(r *http.Request, secret string, maxAge time.Duration) *http.Cookie {
	age := int(maxAge / time.Second)
	if maxAge < 0 {
		age = -1
	}
	return &http.Cookie{Name: Cookie, Value: secret, Path: "/", MaxAge: age, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil || r.Header.Get("X-Forwarded-Proto") == "https"}
}

// logout answers POST /api/logout with 204: the login (or personal token)
// the request used ends, and the cookie is cleared.
func (s *Server) logout(w http.ResponseWriter, r *http.Request) {
	if principal(r).Admin {
		s.fail(w, r, hub.Errorf(hub.EBADREQUEST, "the admin token is no login: it cannot be logged out (it is the setting api-token)"))
		return
	}
	secret, cookie := presented(r)
	if err := s.accounts.Logout(r.Context(), secret); err != nil {
		s.fail(w, r, err)
		return
	}
	if cookie {
		http.SetCookie(w, sessionCookie(r, "", -1))
	}
	w.WriteHeader(http.StatusNoContent)
}

// me answers who the caller is: {"user","admin","actor","homes":[…]}.
func (s *Server) me(w http.ResponseWriter, r *http.Request) {
	p := principal(r)
	writeJSON(w, http.StatusOK, map[string]any{"user": p.User, "admin": p.Admin, "actor": p.Actor(),
		"homes": s.counted(p, s.accounts.Homes(p)...)})
}

func (s *Server) listUsers(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"users": s.accounts.Users()})
}

var userSpec = bodySpec{
	kinds: fieldKinds{"name": "a string", "password": "a string"},
	shape: `{"name":"alice","password":"at least 8 characters"}`,
	limit: 4 << 10,
}

// addUser answers POST /api/users {"name","password"}: 201 the user; 409
// for a name taken, 422 for a bad name or a short password.
func (s *Server) addUser(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Name     string `json:"name"`
		Password string `json:"password"`
	}
	if err := decodeBody(w, r, &body, userSpec, false); err != nil {
		s.fail(w, r, err)
		return
	}
	u, err := s.accounts.AddUser(r.Context(), body.Name, body.Password)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.log.Info("user added", "user", u.Name)
	writeJSON(w, http.StatusCreated, u)
}

func (s *Server) deleteUser(w http.ResponseWriter, r *http.Request) {
	if err := s.accounts.DeleteUser(r.Context(), r.PathValue("name")); err != nil {
		s.fail(w, r, err)
		return
	}
	s.log.Info("user removed", "user", r.PathValue("name"))
	w.WriteHeader(http.StatusNoContent)
}

var passwordSpec = bodySpec{
	kinds: fieldKinds{"current": "a string", "password": "a string"},
	shape: `{"current":"…","password":"…"}`,
	limit: 4 << 10,
}

// setPassword answers PUT /api/users/{name}/password with 204: the admin
// sets anyone's ({"password"}); a user changes their own with
// {"current","password"}, keeping the login they use. Other logins of the
// user end.
func (s *Server) setPassword(w http.ResponseWriter, r *http.Request) {
	p, name := principal(r), r.PathValue("name")
	var body struct {
		Current  string `json:"current"`
		Password string `json:"password"`
	}
	if err := decodeBody(w, r, &body, passwordSpec, false); err != nil {
		s.fail(w, r, err)
		return
	}
	var err error
	switch {
	case p.Admin:
		err = s.accounts.SetPassword(r.Context(), name, body.Password)
	case p.User == name:
		err = s.accounts.ChangePassword(r.Context(), name, body.Current, body.Password, p.Credential, hub.SourceKey(r.RemoteAddr))
	default:
		err = hub.Errorf(hub.EFORBIDDEN, "you may change only your own password (the admin sets anyone's)")
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// listTokens answers {"tokens":[…]}: the caller's logins and personal
// tokens, newest first (never their secrets).
func (s *Server) listTokens(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"tokens": s.accounts.Tokens(principal(r).User)})
}

var tokenSpec = bodySpec{kinds: fieldKinds{"name": "a string"}, shape: `{"name":"backup-script"}`, limit: 4 << 10}

// createToken answers POST /api/tokens {"name"}: 201 {"token",…} with the
// secret, shown this once.
func (s *Server) createToken(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Name string `json:"name"`
	}
	if err := decodeBody(w, r, &body, tokenSpec, false); err != nil {
		s.fail(w, r, err)
		return
	}
	secret, t, err := s.accounts.CreateToken(r.Context(), principal(r).User, body.Name)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, struct {
		Token string `json:"token"`
		hub.TokenView
	}{secret, t})
}

// revokeToken answers DELETE /api/tokens/{id} with 204: one of the
// caller's tokens ends at once (the admin may end anyone's).
func (s *Server) revokeToken(w http.ResponseWriter, r *http.Request) {
	if err := s.accounts.RevokeToken(r.Context(), principal(r).User, r.PathValue("id")); err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
