package hub

import "time"

// Where a setting's value comes from, lowest precedence first: the hub's
// default, the config file, the environment, a value stored through the
// API (PUT /api/settings), a command-line flag. A flag wins over a stored
// value; a stored value over the file and the environment.
const (
	SourceDefault = "default"
	SourceFile    = "file"
	SourceEnv     = "env"
	SourceStored  = "stored"
	SourceFlag    = "flag"
)

// StoredSetting is one setting as kept in the database (package
// livesettings): its name as in the config file, its value (a key is kept
// too: the data directory is the owner's alone) and when it was set.
type StoredSetting struct {
	Name    string
	Value   string
	Updated time.Time
}

// SettingView is one live setting as GET /api/settings shows it. A key
// (agent-api-key, asr-api-key, tts-api-key) never shows its value: Set
// says whether there is one.
type SettingView struct {
	Value   *string   `json:"value,omitempty"`
	Set     *bool     `json:"set,omitempty"`
	Updated time.Time `json:"updated,omitzero"`
	Source  string    `json:"source"`
}

// SettingsTest is the answer of POST /api/settings/test: whether the
// smallest real request to a provider worked, and if not, what failed in
// words (Problem: "wrong key", "unreachable", "unknown model", "not
// configured", "failed") with the provider's own message in Detail.
type SettingsTest struct {
	What    string `json:"what"`
	OK      bool   `json:"ok"`
	Problem string `json:"problem,omitempty"`
	Detail  string `json:"detail,omitempty"`
}

// Persona is how the assistant presents itself on a device: its name, its
// role (the system prompt's description of who it is), the language it
// speaks, the synthesis voice and the greeting. An empty field is not set
// (a device's falls back to its home's, a home's to the hub's defaults).
type Persona struct {
	Name     string    `json:"name"`
	Role     string    `json:"role"`
	Language string    `json:"language"`
	Voice    string    `json:"voice"`
	Greeting string    `json:"greeting"`
	Updated  time.Time `json:"updated,omitzero"`
}

// PersonaView is GET /api/{devices|homes}/{id}/persona: what is set there
// (Own), what a device inherits from its home (Home, devices only) and
// what applies (Effective: own, else home, else the defaults).
type PersonaView struct {
	Own       Persona  `json:"persona"`
	Home      *Persona `json:"home,omitempty"`
	Effective Persona  `json:"effective"`
}

// Memory is what the assistant keeps about a device's conversations: a
// short summary the model wrote after the last one, given to it at the
// start of the next.
type Memory struct {
	Device  string    `json:"device"`
	Text    string    `json:"text"`
	Updated time.Time `json:"updated,omitzero"`
}

// EventMemoryUpdated: the model wrote a device's memory after a
// conversation (data: {"chars": n}; the text only through the API).
const EventMemoryUpdated = "memory_updated"
