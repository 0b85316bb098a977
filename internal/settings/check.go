package settings

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// This file turns what a person wrote wrong in the config file or on the
// command line into a message that names the setting and the fix, instead of
// the YAML library's Go type names ("field call_timeout not found in type
// server.Config", "cannot unmarshal !!str `fast` into time.Duration").

// checkFile reads the config file's top-level keys one by one and reports
// every unknown key and every value of the wrong kind, by setting name, in
// the words a person uses. It returns nil when it finds nothing to say; the
// decoder then reads the file (and reports anything checkFile missed).
func checkFile(data []byte, path string, t reflect.Type, o Options) error {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return fmt.Errorf("config file %s is not valid YAML: %w", path, err)
	}
	if len(doc.Content) == 0 {
		return nil // empty file
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return fmt.Errorf("config file %s: line %d: expected settings as key: value lines, e.g. \"listen: :8000\"", path, root.Line)
	}
	fields := map[string]reflect.StructField{}
	for i := 0; i < t.NumField(); i++ {
		fields[t.Field(i).Tag.Get("yaml")] = t.Field(i)
	}
	known := keys(t)
	for name := range o.Sections {
		known = append(known, name)
	}
	var errs []error
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if section, ok := o.Sections[k.Value]; ok {
			errs = append(errs, checkSection(k.Value, v, path, section, o.Program)...)
			continue
		}
		f, ok := fields[k.Value]
		if !ok {
			errs = append(errs, unknownSetting(k.Value, "in "+path, known, o.Program))
			continue
		}
		if err := checkValue(v, f.Type); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w (%s line %d)", k.Value, err, path, v.Line))
		}
	}
	return errors.Join(errs...)
}

// checkSection checks a section of the file (name: followed by keys
// with single values).
func checkSection(name string, v *yaml.Node, path string, sec Section, program string) []error {
	if v.Kind != yaml.MappingNode {
		return []error{fmt.Errorf("%s (%s line %d): expected a section such as \"%s\"", name, path, v.Line, sec.Example)}
	}
	keys := sec.Keys
	var errs []error
	for i := 0; i+1 < len(v.Content); i += 2 {
		k, val := v.Content[i], v.Content[i+1]
		if !slices.Contains(keys, k.Value) {
			errs = append(errs, unknownSetting(name+": "+k.Value, "in "+path, keys, program))
			continue
		}
		if val.Kind != yaml.ScalarNode {
			errs = append(errs, fmt.Errorf("%s: %s (%s line %d): expected a single value", name, k.Value, path, val.Line))
		}
	}
	return errs
}

// checkValue says what is wrong with a value for a setting of type t.
func checkValue(v *yaml.Node, t reflect.Type) error {
	if v.Kind == yaml.AliasNode {
		return nil // the decoder resolves and checks it
	}
	switch t {
	case reflect.TypeFor[[]string]():
		if v.Kind == yaml.SequenceNode {
			for _, e := range v.Content {
				if e.Kind != yaml.ScalarNode {
					return fmt.Errorf("expected a list of words, e.g. [kitchen-secret, bedroom-secret]")
				}
			}
			return nil
		}
		return fmt.Errorf("expected a list, e.g. [kitchen-secret, bedroom-secret]")
	}
	if t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Struct {
		return checkList(v, t.Elem())
	}
	if v.Kind != yaml.ScalarNode {
		return fmt.Errorf("expected a single value, not a list or section")
	}
	switch t {
	case reflect.TypeFor[time.Duration]():
		if _, err := time.ParseDuration(v.Value); err != nil {
			return fmt.Errorf("%q is not a duration (use e.g. 30s, 2m)", v.Value)
		}
	case reflect.TypeFor[int]():
		var n int
		if err := v.Decode(&n); err != nil {
			return fmt.Errorf("%q is not a whole number", v.Value)
		}
	}
	return nil
}

// unknownSetting names an unknown key and the closest valid one, if any is
// close: "unknown setting call_timeout in hub.yaml; did you mean call-timeout?"
func unknownSetting(key, where string, valid []string, program string) error {
	msg := fmt.Sprintf("unknown setting %s %s", key, where)
	if s := closest(key, valid); s != "" {
		return fmt.Errorf("%s; did you mean %s?", msg, s)
	}
	return fmt.Errorf("%s (run %s --help for the list)", msg, program)
}

// unknownFlag rewrites the flag package's "flag provided but not defined:
// -x" the same way; other errors are returned as they are.
func unknownFlag(err error, valid []string, program string) error {
	const prefix = "flag provided but not defined: "
	name, ok := strings.CutPrefix(err.Error(), prefix)
	if !ok {
		return err
	}
	name = strings.TrimLeft(name, "-")
	msg := "unknown flag --" + name
	if s := closest(name, valid); s != "" {
		return fmt.Errorf("%s; did you mean --%s?", msg, s)
	}
	return fmt.Errorf("%s (run %s --help for the list)", msg, program)
}

// closest returns the valid key nearest to key, or "" when none is near:
// underscores and case are forgiven, then up to a third of the letters.
func closest(key string, valid []string) string {
	norm := strings.ToLower(strings.ReplaceAll(key, "_", "-"))
	if i := strings.LastIndex(norm, " "); i >= 0 {
		norm = norm[i+1:] // "agent: modle" → "modle"
	}
	best, bestD := "", max(2, len(norm)/3)+1
	for _, v := range valid {
		if d := editDistance(norm, v); d < bestD {
			best, bestD = v, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// checkList checks a setting that is a list of sections (a slice of
// structs whose fields have yaml tags), such as mcp-servers: each entry's
// keys, and that each value is a single value, a list (for []string) or
// a section of single values (for maps).
func checkList(v *yaml.Node, t reflect.Type) error {
	if v.Kind != yaml.SequenceNode {
		return fmt.Errorf("expected a list of sections, each on lines starting with \"- \"")
	}
	fields := map[string]reflect.Type{}
	var keys []string
	for i := 0; i < t.NumField(); i++ {
		k := t.Field(i).Tag.Get("yaml")
		fields[k] = t.Field(i).Type
		keys = append(keys, k)
	}
	var errs []error
	for n, e := range v.Content {
		if e.Kind != yaml.MappingNode {
			errs = append(errs, fmt.Errorf("entry %d (line %d): expected a section of %s", n+1, e.Line, strings.Join(keys, ", ")))
			continue
		}
		for i := 0; i+1 < len(e.Content); i += 2 {
			k, val := e.Content[i], e.Content[i+1]
			ft, ok := fields[k.Value]
			if !ok {
				msg := fmt.Sprintf("entry %d (line %d): unknown key %s (the keys are %s)", n+1, k.Line, k.Value, strings.Join(keys, ", "))
				if c := closest(k.Value, keys); c != "" {
					msg += "; did you mean " + c + "?"
				}
				errs = append(errs, errors.New(msg))
				continue
			}
			want := yaml.ScalarNode
			switch ft.Kind() {
			case reflect.Slice:
				want = yaml.SequenceNode
			case reflect.Map:
				want = yaml.MappingNode
			}
			if val.Kind != want && val.Kind != yaml.AliasNode {
				errs = append(errs, fmt.Errorf("entry %d: %s (line %d): expected %s", n+1, k.Value, val.Line, kindWords[want]))
			}
		}
	}
	return errors.Join(errs...)
}

var kindWords = map[yaml.Kind]string{
	yaml.ScalarNode:   "a single value",
	yaml.SequenceNode: "a list, e.g. [--port, \"8080\"]",
	yaml.MappingNode:  "a section, e.g. {Authorization: \"Bearer …\"}",
}

// Closest returns the valid key nearest to key, as the messages about
// unknown settings name it ("did you mean tts-voice?"); "" when none is near.
func Closest(key string, valid []string) string { return closest(key, valid) }
