-- Initial schema. Times are UTC unix nanoseconds (NULL for the zero time);
-- JSON columns hold the text as the hub received or encoded it (validated
-- in Go, off the single writer: json_valid here would cost ~10% of a write).

-- tool_sets holds each distinct tool list once: many devices run the same
-- firmware and report identical lists. Rows no device points at are removed.
CREATE TABLE tool_sets (
	hash       TEXT PRIMARY KEY,
	tools_json TEXT NOT NULL CHECK (json_valid(tools_json))
);

CREATE TABLE devices (
	id               TEXT PRIMARY KEY CHECK (id <> ''),
	client_id        TEXT NOT NULL DEFAULT '',
	name             TEXT NOT NULL DEFAULT '',
	room             TEXT NOT NULL DEFAULT '',
	aliases          TEXT NOT NULL DEFAULT 'null',
	board            TEXT NOT NULL DEFAULT '',
	firmware         TEXT NOT NULL DEFAULT '',
	protocol_version INTEGER NOT NULL DEFAULT 0,
	features         TEXT,
	mcp              INTEGER NOT NULL DEFAULT 0,
	system_info      TEXT,
	first_seen       INTEGER,
	last_seen        INTEGER,
	tools_hash       TEXT REFERENCES tool_sets (hash),
	tools_saved      INTEGER
);
CREATE INDEX devices_tools_hash ON devices (tools_hash);

-- things are legacy IoT things: descriptor (name, description, properties,
-- methods) and last known state.
CREATE TABLE things (
	device_id     TEXT NOT NULL REFERENCES devices (id) ON DELETE CASCADE,
	name          TEXT NOT NULL,
	descriptor    TEXT NOT NULL,
	state         TEXT NOT NULL,
	state_updated INTEGER,
	PRIMARY KEY (device_id, name)
) WITHOUT ROWID;

-- calls and events are bounded logs. They carry no foreign key: a record may
-- name a device that was just deleted (device_deleted events do).
-- AUTOINCREMENT keeps ids from being reused after pruning or deletion.
CREATE TABLE calls (
	id          INTEGER PRIMARY KEY AUTOINCREMENT,
	device_id   TEXT NOT NULL,
	kind        TEXT NOT NULL,
	tool        TEXT NOT NULL,
	caller      TEXT NOT NULL,
	arguments   TEXT NOT NULL,
	result      TEXT NOT NULL,
	outcome     TEXT NOT NULL,
	started     INTEGER,
	duration_ms REAL NOT NULL
);
CREATE INDEX calls_device ON calls (device_id, id);

CREATE TABLE events (
	id        INTEGER PRIMARY KEY AUTOINCREMENT,
	type      TEXT NOT NULL,
	device_id TEXT NOT NULL,
	time      INTEGER,
	data      TEXT
);
CREATE INDEX events_device ON events (device_id, id);
