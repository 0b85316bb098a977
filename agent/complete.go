package agent

// Complete fills the fields c leaves empty with the defaults and makes the
// provider c names, or says what is missing (an EINVALID error whose
// message says what to set). Package livesettings makes the agent's model
// with it each time the settings change (the agent then uses it through
// NewWithProvider).
func (c Config) Complete() (Config, Provider, error) { return c.withDefaults() }
