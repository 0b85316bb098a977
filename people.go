package hub

import (
	"context"
	"strings"
	"time"
)

// Role is a person's part in a home.
type Role string

// Roles, from most to least trusted.
const (
	// RoleOwner manages the home: its members and their roles, its
	// devices, and everything a member does.
	RoleOwner Role = "owner"
	// RoleMember controls the home's devices and binds new ones.
	RoleMember Role = "member"
	// RoleGuest calls tools, except user-only tools and tools that reboot,
	// upgrade, reset or unlock a device (RestrictedTool), and sees no call
	// history but their own.
	RoleGuest Role = "guest"
)

// Valid reports whether r is one of the three roles.
func (r Role) Valid() bool { return r == RoleOwner || r == RoleMember || r == RoleGuest }

// AtLeast reports whether r is as trusted as min or more.
func (r Role) AtLeast(min Role) bool { return r.rank() >= min.rank() }

func (r Role) rank() int {
	switch r {
	case RoleOwner:
		return 3
	case RoleMember:
		return 2
	case RoleGuest:
		return 1
	}
	return 0
}

// User is a person with an account on the hub.
type User struct {
	Name         string
	PasswordHash string // argon2id, in the PHC string format; never shown
	Created      time.Time
}

// Home is a group of devices and the people who share them.
type Home struct {
	ID      string
	Name    string
	Created time.Time
	Members map[string]Role // user name → role; at least one owner
}

// Token kinds.
const (
	TokenLogin    = "login"    // from POST /api/login or the dashboard's form; expires
	TokenPersonal = "personal" // named, made by its user for scripts; until revoked
)

// UserToken is a bearer credential of a user, kept only as a hash.
type UserToken struct {
	ID      string // public: names the token in lists and revocations
	User    string
	Kind    string // TokenLogin or TokenPersonal
	Name    string // a personal token's name; "" for a login
	Hash    []byte // SHA-256 of the secret
	Created time.Time
	Expires time.Time // zero: until revoked
}

// UserView is a user as the API shows them.
type UserView struct {
	Name    string     `json:"name"`
	Created time.Time  `json:"created"`
	Homes   []HomeView `json:"homes"`
}

// HomeView is a home as one person sees it.
type HomeView struct {
	ID      string       `json:"id"`
	Name    string       `json:"name"`
	Role    Role         `json:"role,omitempty"` // the viewer's role ("" for the admin)
	Created time.Time    `json:"created"`
	Members []HomeMember `json:"members,omitempty"`
	Devices int          `json:"devices"`
}

// HomeMember is one person of a home.
type HomeMember struct {
	User string `json:"user"`
	Role Role   `json:"role"`
}

// TokenView is a user's token as its user sees it (never the secret).
type TokenView struct {
	ID      string    `json:"id"`
	Kind    string    `json:"kind"`
	Name    string    `json:"name,omitempty"`
	Created time.Time `json:"created"`
	Expires time.Time `json:"expires,omitzero"`
}

// Principal is who is asking, as proved by the credential they presented
// (the admin token, a user's login or personal token, an OAuth access
// token) or by the device that is speaking. Every surface that shows or
// controls devices asks the same two questions of it: Sees (is this
// device there at all) and MayCall (may this tool be run).
//
// A Principal is a snapshot: a long-lived stream resolves its credential
// again when people, homes or tokens change (Credential names it).
type Principal struct {
	Admin bool   // the operator's admin token: sees and does everything
	User  string // the person, for users and for an agent or client acting for one
	// Homes are the homes the principal acts in, with its role in each. A
	// device's voice acts in its own home (the key "" for a device in no
	// home, which then reaches only the devices in no home either).
	Homes map[string]Role

	Token  string // the name of the personal token used, if any
	Client string // the OAuth client acting for User, if any
	Agent  bool   // the built-in agent, acting for User or Device
	Device string // the device whose own voice is asking, if any

	// Credential identifies what was presented (a token's id, an OAuth
	// grant), for re-checking on long-lived streams; "" for the admin.
	Credential string
}

// Admin is the operator's principal.
var Admin = &Principal{Admin: true}

// DevicePrincipal is the principal of a device's own voice conversation:
// it acts with the rights of a member of the device's home.
func DevicePrincipal(id, home string) *Principal {
	return &Principal{Device: id, Homes: map[string]Role{home: RoleMember}, Agent: true}
}

// Sees reports whether a device in home is there at all for p. Anything
// else is, for p, a device that does not exist.
func (p *Principal) Sees(home string) bool {
	if p.Admin {
		return true
	}
	_, ok := p.Homes[home]
	return ok
}

// RoleIn returns p's role in home ("" when p is not in it; RoleOwner for
// the admin).
func (p *Principal) RoleIn(home string) Role {
	if p.Admin {
		return RoleOwner
	}
	return p.Homes[home]
}

// MayCall says whether p may run the tool (or IoT method) tool of a device
// in home, userOnly being the tool's annotation: nil, or an EFORBIDDEN
// error that says why. A device p does not see is ENOTFOUND, as if it did
// not exist.
func (p *Principal) MayCall(deviceID, home, tool string, userOnly bool) error {
	if !p.Sees(home) {
		return Errorf(ENOTFOUND, "device %q is not known to the hub", deviceID)
	}
	if p.RoleIn(home) != RoleGuest {
		return nil
	}
	if userOnly {
		return Errorf(EFORBIDDEN, "a guest may not call %s: the device marks it as a tool for people only; ask a member or owner of the home", tool)
	}
	if RestrictedTool(tool) {
		return Errorf(EFORBIDDEN, "a guest may not call %s: it reboots, upgrades, resets or unlocks the device; ask a member or owner of the home", tool)
	}
	return nil
}

// SeesCall reports whether p may see a call record of a device in home:
// guests see only the calls they made.
func (p *Principal) SeesCall(home string, rec CallRecord) bool {
	if !p.Sees(home) {
		return false
	}
	return p.RoleIn(home) != RoleGuest || (rec.User != "" && rec.User == p.User)
}

// restrictedWords name what a guest may not do to a device, in the tool
// names firmware and people use (self.reboot, self.upgrade_firmware,
// self.factory_reset, door.unlock, …).
var restrictedWords = []string{"reboot", "restart", "upgrade", "firmware", "reset", "unlock", "重启", "升级", "重置", "解锁"}

// RestrictedTool reports whether a tool's name says it reboots, upgrades,
// resets or unlocks a device (what guests may not do).
func RestrictedTool(name string) bool {
	n := strings.ToLower(name)
	for _, w := range restrictedWords {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// Actor says who p is, for the call history and events: "admin", "alice",
// "alice (token backup)", "Claude for alice", "agent for alice", "voice of
// aa:bb:cc:dd:ee:ff".
func (p *Principal) Actor() string {
	switch {
	case p == nil:
		return ""
	case p.Device != "":
		return "voice of " + p.Device
	case p.Admin && p.Agent:
		return "agent for admin"
	case p.Admin:
		return "admin"
	case p.Agent:
		return "agent for " + p.User
	case p.Client != "":
		return p.Client + " for " + p.User
	case p.Token != "":
		return p.User + " (token " + p.Token + ")"
	}
	return p.User
}

// AsAgent returns p as the built-in agent acting for it.
func (p *Principal) AsAgent() *Principal {
	q := *p
	q.Agent = true
	return &q
}

type principalKey struct{}

// WithPrincipal returns ctx carrying p.
func WithPrincipal(ctx context.Context, p *Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalFrom returns the principal ctx carries, or nil when it carries
// none (the hub's own work: discovery, the cluster, tests of a part).
// Every surface for people and programs sets one.
func PrincipalFrom(ctx context.Context) *Principal {
	p, _ := ctx.Value(principalKey{}).(*Principal)
	return p
}
