-- MCP clients registered at the hub's OAuth authorization server, and the
-- grants a person approved for them (token hashes only, never tokens).
CREATE TABLE oauth_clients (
	client_id     TEXT PRIMARY KEY,
	name          TEXT NOT NULL,
	redirect_uris TEXT NOT NULL, -- JSON array of strings
	auth_method   TEXT NOT NULL,
	secret_hash   BLOB,
	registered    INTEGER NOT NULL,
	address       TEXT NOT NULL DEFAULT ''
);

CREATE TABLE oauth_grants (
	grant_id        TEXT PRIMARY KEY,
	client_id       TEXT NOT NULL REFERENCES oauth_clients (client_id) ON DELETE CASCADE,
	approved        INTEGER NOT NULL,
	access_hash     BLOB NOT NULL,
	access_expires  INTEGER NOT NULL,
	refresh_hash    BLOB NOT NULL,
	refresh_expires INTEGER NOT NULL,
	last_used       INTEGER
);
CREATE INDEX oauth_grants_client ON oauth_grants (client_id);
