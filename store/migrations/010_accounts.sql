-- People: users with argon2id password hashes, homes with their members'
-- roles, and users' tokens (login and personal, SHA-256 hashes only).
-- Devices belong to a home ('' : none yet, only the admin sees them); a
-- call record says who caused it (by) and for whom (by_user).
CREATE TABLE users (
	name          TEXT PRIMARY KEY,
	password_hash TEXT NOT NULL,
	created       INTEGER NOT NULL
);

CREATE TABLE homes (
	id      TEXT PRIMARY KEY,
	name    TEXT NOT NULL,
	created INTEGER NOT NULL,
	members TEXT NOT NULL -- JSON object: user name → role
);

CREATE TABLE user_tokens (
	id      TEXT PRIMARY KEY,
	user    TEXT NOT NULL, -- no foreign key: in a cluster a token may arrive before its user
	kind    TEXT NOT NULL,
	name    TEXT NOT NULL DEFAULT '',
	hash    BLOB NOT NULL UNIQUE,
	created INTEGER NOT NULL,
	expires INTEGER
);
CREATE INDEX user_tokens_user ON user_tokens (user);

ALTER TABLE devices ADD COLUMN home TEXT NOT NULL DEFAULT '';
ALTER TABLE calls ADD COLUMN by_actor TEXT NOT NULL DEFAULT '';
ALTER TABLE calls ADD COLUMN by_user TEXT NOT NULL DEFAULT '';
ALTER TABLE peer_calls ADD COLUMN by_actor TEXT NOT NULL DEFAULT '';
ALTER TABLE peer_calls ADD COLUMN by_user TEXT NOT NULL DEFAULT '';
-- The user an OAuth client acts for (the person who approved it); '' for
-- grants approved by the admin before people existed.
ALTER TABLE oauth_grants ADD COLUMN user TEXT NOT NULL DEFAULT '';
-- Who caused an event (a person's change, a call): Principal.Actor.
ALTER TABLE events ADD COLUMN by_actor TEXT NOT NULL DEFAULT '';
