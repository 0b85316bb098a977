-- A home's own settings (issue 23): its owner's choice of the agent's
-- model and of the voices for the home's devices, with the owner's own
-- keys, by the name the config file gives them (agent-model, tts-voice,
-- tts-api-key, …). A name not set here falls back to the hub's settings.
-- Removed with the home.
CREATE TABLE home_settings (
	home    TEXT NOT NULL,
	name    TEXT NOT NULL,
	value   TEXT NOT NULL,
	updated INTEGER NOT NULL,
	PRIMARY KEY (home, name)
);
