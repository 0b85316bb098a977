package config

import (
	"os"
	"reflect"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/xiaozhi-hub/hub"
)

// Sources says where each setting of cfg (as Load made it from args and
// getenv) came from, by key: hub.SourceFlag, hub.SourceEnv (XZ_HUB_…, or a
// provider's own variable such as OPENAI_API_KEY), hub.SourceFile or
// hub.SourceDefault. The live settings page shows it, and a value fixed
// by a flag cannot be changed there.
func Sources(cfg Config, args []string, getenv func(string) string) map[string]string {
	flags, configPath := flagKeys(args)
	if configPath == "" {
		configPath = getenv(settingsOptions.Env("config"))
	}
	inFile := fileKeys(configPath)
	def := reflect.ValueOf(Default())
	cur := reflect.ValueOf(cfg)
	t := cur.Type()
	out := make(map[string]string, t.NumField())
	for i := range t.NumField() {
		key := t.Field(i).Tag.Get("yaml")
		switch {
		case flags[key]:
			out[key] = hub.SourceFlag
		case getenv(settingsOptions.Env(key)) != "":
			out[key] = hub.SourceEnv
		case inFile[key]:
			out[key] = hub.SourceFile
		case !reflect.DeepEqual(cur.Field(i).Interface(), def.Field(i).Interface()):
			// Filled by Load from a provider's variable (resolveAgent,
			// resolveVoice): the only other way a value differs.
			out[key] = hub.SourceEnv
		default:
			out[key] = hub.SourceDefault
		}
	}
	return out
}

// flagKeys returns the settings args set as flags, and the config file
// --config names.
func flagKeys(args []string) (map[string]bool, string) {
	set := map[string]bool{}
	var configPath string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" || !strings.HasPrefix(a, "-") {
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if name == "config" {
			if !hasValue && i+1 < len(args) {
				value = args[i+1]
			}
			configPath = value
			continue
		}
		set[name] = true
	}
	return set, configPath
}

// fileKeys returns the settings a config file sets (the agent section's
// as agent-…); none when it cannot be read (Load has read it already).
func fileKeys(path string) map[string]bool {
	set := map[string]bool{}
	if path == "" {
		return set
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return set
	}
	var doc map[string]any
	if yaml.Unmarshal(data, &doc) != nil {
		return set
	}
	for k, v := range doc {
		set[k] = true
		if sec, ok := v.(map[string]any); ok && k == "agent" {
			for sk := range sec {
				set["agent-"+sk] = true
			}
		}
	}
	return set
}
