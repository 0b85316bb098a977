-- Services: outside MCP servers whose tools the hub offers beside the
-- devices' (package services). An endpoint keeps only its token's SHA-256;
-- a configured server (mcp-servers) has none. tools is the last list the
-- service gave, as JSON, served while it is away.
CREATE TABLE services (
	name       TEXT PRIMARY KEY,
	kind       TEXT NOT NULL,
	home       TEXT NOT NULL DEFAULT '',
	token_hash BLOB UNIQUE,
	created    INTEGER NOT NULL,
	tools      TEXT NOT NULL DEFAULT '[]'
);
