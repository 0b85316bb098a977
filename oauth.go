package hub

import "time"

// OAuthClient is a program registered at the hub's OAuth authorization
// server (RFC 7591 dynamic registration) to use /mcp: Claude, ChatGPT, the
// MCP Inspector, an IDE. Registering grants nothing; a person approves each
// authorization (an OAuthGrant).
type OAuthClient struct {
	ID           string
	Name         string    // client_name as the client gave it, for people
	RedirectURIs []string  // exact URIs the authorization may return to (loopback: any port)
	AuthMethod   string    // token_endpoint_auth_method: "none", "client_secret_post" or "client_secret_basic"
	SecretHash   []byte    // SHA-256 of the client secret; nil for public clients ("none")
	Registered   time.Time // when it registered
	Address      string    // the address it registered from
}

// OAuthGrant is one approval of a client by a person: the client's current
// access and refresh tokens, kept only as SHA-256 hashes. Revoking the
// grant (or the client) ends both at once.
type OAuthGrant struct {
	ID             string
	ClientID       string
	Approved       time.Time
	AccessHash     []byte
	AccessExpires  time.Time
	RefreshHash    []byte
	RefreshExpires time.Time
	// User is the person who approved the client, whom it acts for ("":
	// approved with the admin token, before people existed).
	User     string
	LastUsed time.Time // the last /mcp request with its access token (written at most every few minutes)
	// Rotated are the SHA-256 hashes of the refresh tokens this grant
	// issued before its current one, newest last (a bounded number): one
	// presented again means the grant's tokens leaked, and the grant ends.
	Rotated [][]byte `json:",omitempty"`
}

// OAuthPending is an authorization waiting for a person, as the admin sees it.
type OAuthPending struct {
	ID         string    `json:"id"`
	ClientID   string    `json:"clientId"`
	ClientName string    `json:"clientName"`
	Redirect   string    `json:"redirect"` // scheme://host of where the client gets the code
	Address    string    `json:"address"`  // who asked
	Created    time.Time `json:"created"`
	Expires    time.Time `json:"expires"`
}

// OAuthClientView is a registered client with its grants, as the admin sees it.
type OAuthClientView struct {
	ID         string           `json:"id"`
	Name       string           `json:"name"`
	Redirects  []string         `json:"redirectUris"`
	Registered time.Time        `json:"registered"`
	Address    string           `json:"address,omitempty"`
	Grants     []OAuthGrantView `json:"grants"`
}

// OAuthGrantView is one approval of a client.
type OAuthGrantView struct {
	User           string     `json:"user,omitempty"` // who approved it ("": the admin)
	Approved       time.Time  `json:"approved"`
	AccessExpires  time.Time  `json:"accessExpires"`
	RefreshExpires time.Time  `json:"refreshExpires"`
	LastUsed       *time.Time `json:"lastUsed,omitempty"`
}
