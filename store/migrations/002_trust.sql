-- device_trust is what the hub decided about each device (approval, token
-- generation, revocation) and what the device told the OTA endpoint at its
-- last check. It has no foreign key to devices: trust is decided before a
-- device first connects, and a device deleted from the cache keeps its
-- token generation (so that its old tokens do not come back to life).
CREATE TABLE device_trust (
	device_id          TEXT PRIMARY KEY CHECK (device_id <> ''),
	client_id          TEXT NOT NULL DEFAULT '',
	generation         INTEGER NOT NULL DEFAULT 0,
	approved           INTEGER,
	revoked            INTEGER,
	activation_version INTEGER NOT NULL DEFAULT 0,
	serial_number      TEXT NOT NULL DEFAULT '',
	activation_hmac    TEXT NOT NULL DEFAULT '',
	board              TEXT NOT NULL DEFAULT '',
	firmware           TEXT NOT NULL DEFAULT '',
	system_info        TEXT,
	last_check         INTEGER
) WITHOUT ROWID;
