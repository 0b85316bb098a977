package api

import (
	"context"
	"crypto/sha256"
	"net/http"

	"github.com/xiaozhi-hub/hub"
)

// Accounts is the hub's people (accounts.Service) as the API uses them.
// Errors are *hub.Error values: ENOTFOUND for a home or user the caller
// does not see, EFORBIDDEN for a role too low, EUNAUTHORIZED for a dead
// credential, ETOOMANY (with RetryAfter) past the login failure limits.
type Accounts interface {
	// Resolve returns the principal of a user's token (a login or a
	// personal token), or EUNAUTHORIZED.
	Resolve(secret string) (*hub.Principal, error)
	// Principal returns a user's principal as of now (their homes), or false.
	Principal(user string) (*hub.Principal, bool)
	// Recheck returns p as it is now (its homes and roles), or
	// EUNAUTHORIZED when its credential has ended.
	Recheck(p *hub.Principal) (*hub.Principal, error)
	// Generation changes with every user, home, membership or token;
	// Changed(since) is closed once it differs from since.
	Generation() uint64
	Changed(since uint64) <-chan struct{}

	Login(ctx context.Context, name, password, address string) (string, hub.TokenView, error)
	Logout(ctx context.Context, secret string) error

	AddUser(ctx context.Context, name, password string) (hub.UserView, error)
	SetPassword(ctx context.Context, name, password string) error
	ChangePassword(ctx context.Context, name, current, password, keep, address string) error
	DeleteUser(ctx context.Context, name string) error
	Users() []hub.UserView

	CreateHome(ctx context.Context, p *hub.Principal, name string) (hub.HomeView, error)
	Homes(p *hub.Principal) []hub.HomeView
	Home(p *hub.Principal, id string) (hub.HomeView, error)
	RequireRole(p *hub.Principal, id string, min hub.Role, doing string) error
	SetMember(ctx context.Context, p *hub.Principal, id, user string, role hub.Role) error
	RemoveMember(ctx context.Context, p *hub.Principal, id, user string) error
	RenameHome(ctx context.Context, p *hub.Principal, id, name string) (hub.HomeView, error)
	DeleteHome(ctx context.Context, p *hub.Principal, id string) error

	CreateToken(ctx context.Context, user, name string) (string, hub.TokenView, error)
	Tokens(user string) []hub.TokenView
	RevokeToken(ctx context.Context, user, id string) error
}

// Cookie is the dashboard's login cookie (POST /api/login with
// "cookie":true): HttpOnly, SameSite=Strict, Path=/, Secure over https.
const Cookie = "xzh_session"

// CSRFHeader must be "1" on every request other than GET and HEAD that a
// cookie authenticates: a page of another site can make a browser send
// the cookie, but not this header.
const CSRFHeader = "X-XZH-CSRF"

// requirePrincipal lets through requests that prove who they are, with
// their principal in the request's context (hub.WithPrincipal): the admin
// token (hub.Admin), or a user's token, as a bearer token or the
// dashboard's cookie. Anything else gets 401 and the error JSON, with a
// WWW-Authenticate: Bearer challenge; a cookie request that could have
// come from another site gets 403.
func (s *Server) requirePrincipal(next http.Handler) http.Handler {
	admin := sha256.Sum256([]byte(s.token))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, err := s.authenticate(r, admin)
		if err != nil {
			if hub.ErrorCode(err) == hub.EUNAUTHORIZED {
				challenge := `Bearer realm="xiaozhi-hub"`
				if hasBearer(r) {
					challenge += `, error="invalid_token"`
				}
				w.Header().Set("WWW-Authenticate", challenge)
			}
			writeError(w, s.log, err)
			return
		}
		r2 := r.WithContext(hub.WithPrincipal(r.Context(), p))
		next.ServeHTTP(w, r2)
		r.Pattern = r2.Pattern // the route matched, for the request metrics (httpx.CountRequests)
	})
}

// authenticate says who r is.
func (s *Server) authenticate(r *http.Request, admin [32]byte) (*hub.Principal, error) {
	tok, cookie := presented(r)
	if tok == "" {
		return nil, hub.Errorf(hub.EUNAUTHORIZED, "this endpoint needs a token: send the header \"Authorization: Bearer <token>\" with the admin token or a user's token (POST /api/login gives one)")
	}
	if !cookie && matches(admin, tok) {
		return hub.Admin, nil
	}
	if s.accounts != nil {
		p, err := s.accounts.Resolve(tok)
		if err == nil && cookie {
			err = checkCSRF(r)
		}
		if err == nil || hub.ErrorCode(err) != hub.EUNAUTHORIZED {
			return p, err
		}
	}
	return nil, hub.Errorf(hub.EUNAUTHORIZED, "the bearer token is neither the hub's admin token nor a live user token (it may have expired or been revoked; POST /api/login gives a new one)")
}

// presented is the credential r carries: its bearer token, or else the
// login cookie (cookie true).
func presented(r *http.Request) (secret string, cookie bool) {
	if tok, ok := bearer(r); ok {
		return tok, false
	}
	if c, err := r.Cookie(Cookie); err == nil && c.Value != "" {
		return c.Value, true
	}
	return "", false
}

// checkCSRF refuses a cookie request that changes something without the
// CSRF header, or that the browser says came from another site.
func checkCSRF(r *http.Request) error {
	if r.Header.Get("Sec-Fetch-Site") == "cross-site" {
		return hub.Errorf(hub.EFORBIDDEN, "a request from another site may not use the hub's login cookie")
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead && r.Header.Get(CSRFHeader) != "1" {
		return hub.Errorf(hub.EFORBIDDEN, "a request authenticated by the login cookie that changes something needs the header %s: 1 (it proves the hub's own page sent it)", CSRFHeader)
	}
	return nil
}

func hasBearer(r *http.Request) bool {
	_, ok := bearer(r)
	return ok
}

// principal returns the principal requirePrincipal put in r's context.
// A handler reached without one (a route mounted outside the door by
// mistake) acts for nobody: it sees no device and is no admin.
func principal(r *http.Request) *hub.Principal {
	if p := hub.PrincipalFrom(r.Context()); p != nil {
		return p
	}
	return nobody
}

// nobody is the principal of a request that proved nothing.
var nobody = &hub.Principal{Homes: map[string]hub.Role{}}

// adminOnly serves h to the admin token only: anyone else gets 403
// saying what doing needs.
func (s *Server) adminOnly(doing string, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !principal(r).Admin {
			s.fail(w, r, hub.Errorf(hub.EFORBIDDEN, "only the hub's admin token may %s", doing))
			return
		}
		h(w, r)
	}
}

// seenDevice returns the device of the route's {id} as the caller sees it
// (the same 404 as an unknown device for one they do not see), and
// refuses with 403 a caller whose role in its home is below min ("" for
// any role) saying what doing needs.
func (s *Server) seenDevice(r *http.Request, min hub.Role, doing string) (hub.Device, error) {
	p := principal(r)
	d, err := s.reg.DeviceAs(p, pathID(r))
	if err != nil || min == "" {
		return d, err
	}
	if role := p.RoleIn(d.Home); !role.AtLeast(min) {
		return hub.Device{}, hub.Errorf(hub.EFORBIDDEN, "only %s of the device's home may %s (you are a %s there)", roleWords[min], doing, role)
	}
	return d, nil
}

var roleWords = map[hub.Role]string{hub.RoleOwner: "an owner", hub.RoleMember: "a member or owner", hub.RoleGuest: "a person"}
