-- In a cluster, each node keeps the other nodes' call records and events
-- too (they come through the shared history stream): calls in a table of
-- their own, keyed by the node that made them and its id for them (the
-- registry gives out this node's own ids), events with the node that
-- recorded them ('' for this node).
CREATE TABLE peer_calls (
	node        TEXT NOT NULL,
	id          INTEGER NOT NULL,
	device_id   TEXT NOT NULL,
	kind        TEXT NOT NULL,
	tool        TEXT NOT NULL,
	caller      TEXT NOT NULL,
	arguments   TEXT NOT NULL,
	result      TEXT NOT NULL,
	outcome     TEXT NOT NULL,
	started     INTEGER,
	duration_ms REAL NOT NULL,
	PRIMARY KEY (node, id)
);
CREATE INDEX peer_calls_started ON peer_calls (started);
CREATE INDEX peer_calls_device ON peer_calls (device_id, started);

ALTER TABLE events ADD COLUMN node TEXT NOT NULL DEFAULT '';
