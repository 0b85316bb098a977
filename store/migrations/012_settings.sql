-- Live settings, personas and memory (issue 23).
-- settings: values set through PUT /api/settings, by the name the config
-- file gives them (agent-model, tts-voice, …); keys are kept here too (the
-- data directory is its owner's alone, 0700/0600) and never returned.
CREATE TABLE settings (
	name    TEXT PRIMARY KEY,
	value   TEXT NOT NULL,
	updated INTEGER NOT NULL
);
-- personas: the assistant's name, role, language, voice and greeting, per
-- device (scope 'device') or per home (scope 'home'), as JSON.
CREATE TABLE personas (
	scope   TEXT NOT NULL,
	id      TEXT NOT NULL,
	persona TEXT NOT NULL,
	updated INTEGER NOT NULL,
	PRIMARY KEY (scope, id)
);
-- memories: what the assistant keeps about one device's conversations.
CREATE TABLE memories (
	device  TEXT PRIMARY KEY,
	text    TEXT NOT NULL,
	updated INTEGER NOT NULL
);
