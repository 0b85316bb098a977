package provider

import (
	"errors"
	"fmt"
	"strings"
)

// Table is one package's providers by name (asr's recognizers, tts's
// synthesizers): S their settings, T what they make.
type Table[S, T any] struct {
	// Kind is the prefix of the settings ("asr": asr-provider,
	// asr-base-url), in errors.
	Kind string
	// Common reads the settings every provider has.
	Common func(S) Common
	Rows   []Row[S, T]
}

// Common are the settings every provider has.
type Common struct {
	Provider string // "": none
	BaseURL  string // "": the provider's default
	APIKey   string
	Model    string // "": the provider's default
}

// Row is one provider.
type Row[S, T any] struct {
	Name    string
	Schemes [2]string // of the base URL (none: the provider takes no address)
	// BaseURL and Model are the defaults, for the startup log.
	BaseURL, Model string
	// NeedsKey says the API key is required. With AtDefault, only at
	// BaseURL (the provider itself, Title, rather than one of the Local
	// servers compatible with it, which need a base URL instead).
	NeedsKey  bool
	AtDefault bool
	Title     string // "OpenAI"
	Local     string // "speaches, LocalAI, whisper.cpp"
	// KeyEnv is the environment variable an empty API key comes from
	// ("": none); with AtDefault only at BaseURL.
	KeyEnv string
	// NeedsBaseURL, when set, says the base URL is required, and what it
	// is: "the FunASR server's ws://host:10095".
	NeedsBaseURL string
	// Check says what else the settings need (a local provider's model
	// file, say); nil for nothing.
	Check func(S) error
	New   func(S) T
}

// Names are the providers' names, in the table's order.
func (t *Table[S, T]) Names() []string {
	names := make([]string, len(t.Rows))
	for i, r := range t.Rows {
		names[i] = r.Name
	}
	return names
}

func (t *Table[S, T]) row(name string) (Row[S, T], bool) {
	for _, r := range t.Rows {
		if r.Name == name {
			return r, true
		}
	}
	return Row[S, T]{}, false
}

// Check reports what is wrong with the settings, in the words of the
// settings; nothing for no provider. An unknown name is refused with the
// known ones.
func (t *Table[S, T]) Check(s S) []error {
	c := t.Common(s)
	if c.Provider == "" {
		return nil
	}
	r, ok := t.row(c.Provider)
	if !ok {
		return []error{Unknown(t.Kind+"-provider", c.Provider, t.Names())}
	}
	var errs []error
	k := t.Kind
	switch {
	case r.NeedsKey && r.AtDefault && c.APIKey == "" && c.BaseURL == "":
		errs = append(errs, fmt.Errorf("%[1]s-provider %[2]s with no %[1]s-base-url is %[3]s itself, which needs %[1]s-api-key%[4]s; for a local server (%[5]s) set %[1]s-base-url",
			k, r.Name, r.Title, orEnv(r.KeyEnv), r.Local))
	case r.NeedsKey && !r.AtDefault && c.APIKey == "":
		errs = append(errs, fmt.Errorf("%[1]s-provider %[2]s needs %[1]s-api-key%[3]s", k, r.Name, orEnv(r.KeyEnv)))
	case r.NeedsBaseURL != "" && c.BaseURL == "":
		errs = append(errs, fmt.Errorf("%[1]s-provider %[2]s needs %[1]s-base-url, %[3]s", k, r.Name, r.NeedsBaseURL))
	}
	if r.Check != nil {
		if err := r.Check(s); err != nil {
			errs = append(errs, err)
		}
	}
	if r.Schemes[0] == "" && c.BaseURL != "" {
		errs = append(errs, fmt.Errorf("%s-base-url: %s-provider %s takes no address", k, k, r.Name))
	} else if err := CheckURL(k+"-base-url", c.BaseURL, r.Schemes); err != nil {
		errs = append(errs, err)
	}
	return errs
}

// New makes what the settings name once Check finds nothing wrong; the
// zero T (a nil interface) for no provider.
func (t *Table[S, T]) New(s S) (T, error) {
	var none T
	if err := errors.Join(t.Check(s)...); err != nil {
		return none, err
	}
	r, ok := t.row(t.Common(s).Provider)
	if !ok {
		return none, nil
	}
	return r.New(s), nil
}

// KeyEnv is the environment variable an empty API key is read from for
// these settings; "" for none.
func (t *Table[S, T]) KeyEnv(s S) string {
	c := t.Common(s)
	r, _ := t.row(c.Provider)
	if r.AtDefault && c.BaseURL != "" {
		return ""
	}
	return r.KeyEnv
}

// Summary names the provider, the model and the address it will really
// use, defaults included: "openai whisper-1 at https://api.openai.com/v1".
func (t *Table[S, T]) Summary(s S) string {
	c := t.Common(s)
	r, _ := t.row(c.Provider)
	if c.BaseURL == "" {
		c.BaseURL = r.BaseURL
	}
	if c.Model == "" {
		c.Model = r.Model
	}
	return strings.Join(strings.Fields(c.Provider+" "+c.Model+" at "+c.BaseURL), " ") // no model: "funasr at ws://…"
}

// orEnv is " (or OPENAI_API_KEY)", the other source of a key; "" for none.
func orEnv(env string) string {
	if env == "" {
		return ""
	}
	return " (or " + env + ")"
}
