// Package settings loads a struct of settings from, lowest precedence
// first, the values it already holds (the defaults), a YAML file,
// environment variables and command-line flags, and says what is wrong in
// the words of the settings, never in Go's (check.go). Each field of the
// struct is one setting, keyed by its yaml tag and described by its help
// tag; a field is a string, an int, a time.Duration or a []string.
package settings

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"reflect"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Options describe the program whose settings are loaded.
type Options struct {
	// Program names the program in messages ("run xiaozhi-hub --help for
	// the list").
	Program string
	// EnvPrefix makes a setting's environment variable: the prefix and the
	// key in upper case with "-" as "_" (XZ_HUB_ and call-timeout:
	// XZ_HUB_CALL_TIMEOUT). The config file's variable is the prefix and
	// CONFIG.
	EnvPrefix string
	// Sections are the file's sections other than settings, by name; Decode
	// reads them.
	Sections map[string]Section
	// Decode reads the config file over the settings (and its sections);
	// nil: DecodeYAML.
	Decode func(data []byte) error
}

// Section is a section of the config file: its keys, each with a single
// value, and an example of it for messages.
type Section struct {
	Keys    []string
	Example string // e.g. "agent: {provider: openai, model: qwen2.5}"
}

// Env is the environment variable of the setting key.
func (o Options) Env(key string) string {
	return o.EnvPrefix + strings.ToUpper(strings.ReplaceAll(key, "-", "_"))
}

// Load reads, over the settings dst points to, the config file named by
// --config or the environment, the environment and the flags in args.
func Load(dst any, args []string, getenv func(string) string, o Options) error {
	v := reflect.ValueOf(dst).Elem()
	if o.Decode == nil {
		o.Decode = func(data []byte) error { return DecodeYAML(data, dst) }
	}
	fs := flag.NewFlagSet(o.Program, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // --help: the program prints its usage; errors are returned
	configPath := fs.String("config", getenv(o.Env("config")), "YAML config file (env "+o.Env("config")+")")
	values := map[string]*string{}
	for i := 0; i < v.NumField(); i++ {
		f := v.Type().Field(i)
		key := f.Tag.Get("yaml")
		s := new(string)
		values[key] = s
		fs.Var(stringFlag{s}, key, f.Tag.Get("help")+" (env "+o.Env(key)+")")
	}
	if err := fs.Parse(args); err != nil {
		return unknownFlag(err, append(keys(v.Type()), "config"), o.Program)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if *configPath != "" {
		data, err := os.ReadFile(*configPath)
		if err != nil {
			return fmt.Errorf("config file: %w", err)
		}
		if err := checkFile(data, *configPath, v.Type(), o); err != nil {
			return err
		}
		if err := o.Decode(data); err != nil {
			return fmt.Errorf("config file %s: %w", *configPath, err)
		}
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	for i := 0; i < v.NumField(); i++ {
		key := v.Type().Field(i).Tag.Get("yaml")
		raw, from := *values[key], "flag --"+key
		if !set[key] {
			raw, from = getenv(o.Env(key)), "environment variable "+o.Env(key)
			if raw == "" {
				continue
			}
		}
		if err := setField(v.Field(i), raw); err != nil {
			return fmt.Errorf("%s: %w", from, err)
		}
	}
	return nil
}

// DecodeYAML reads a YAML document over v; unknown keys are errors, an
// empty document is none.
func DecodeYAML(data []byte, v any) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	return nil
}

// Print writes every setting of defaults (a settings struct) as --help
// shows it: the flag, its meaning, its default and its environment
// variable.
func Print(w io.Writer, defaults any, o Options) {
	def := reflect.ValueOf(defaults)
	t := def.Type()
	fmt.Fprintf(w, "  --config FILE\n\tYAML config file (env %s)\n", o.Env("config"))
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		key := f.Tag.Get("yaml")
		fmt.Fprintf(w, "  --%s %s\n\t%s\n\t", key, placeholder(f.Type), f.Tag.Get("help"))
		if d := defaultText(def.Field(i)); d != "" {
			fmt.Fprintf(w, "default: %s; ", d)
		}
		fmt.Fprintf(w, "env %s\n", o.Env(key))
	}
}

// keys returns the key of every setting of t, in field order.
func keys(t reflect.Type) []string {
	out := make([]string, 0, t.NumField())
	for i := 0; i < t.NumField(); i++ {
		out = append(out, t.Field(i).Tag.Get("yaml"))
	}
	return out
}

func placeholder(t reflect.Type) string {
	switch t {
	case reflect.TypeFor[time.Duration]():
		return "DURATION"
	case reflect.TypeFor[int]():
		return "N"
	case reflect.TypeFor[[]string]():
		return "LIST"
	}
	return "VALUE"
}

func defaultText(v reflect.Value) string {
	switch x := v.Interface().(type) {
	case time.Duration:
		if x == 0 {
			return ""
		}
		return x.String()
	case int:
		return fmt.Sprint(x)
	case []string:
		return strings.Join(x, ",")
	case string:
		return x
	}
	return ""
}

func setField(f reflect.Value, raw string) error {
	switch f.Interface().(type) {
	case string:
		f.SetString(raw)
	case int:
		n, err := strconv.Atoi(raw)
		if err != nil {
			return fmt.Errorf("%q is not a whole number", raw)
		}
		f.SetInt(int64(n))
	case time.Duration:
		d, err := time.ParseDuration(raw)
		if err != nil {
			return fmt.Errorf("%q is not a duration such as 30s or 5m", raw)
		}
		f.SetInt(int64(d))
	case []string:
		var list []string
		for _, s := range strings.Split(raw, ",") {
			if s = strings.TrimSpace(s); s != "" {
				list = append(list, s)
			}
		}
		f.Set(reflect.ValueOf(list))
	default:
		if f.Kind() == reflect.Slice && f.Type().Elem().Kind() == reflect.Struct {
			return fmt.Errorf("a list of sections is set in the config file only")
		}
		return fmt.Errorf("unsupported setting type %s", f.Type())
	}
	return nil
}

// stringFlag records a flag's raw value; Load converts it.
type stringFlag struct{ p *string }

func (s stringFlag) String() string {
	if s.p == nil {
		return ""
	}
	return *s.p
}
func (s stringFlag) Set(v string) error { *s.p = v; return nil }
