package server_test

import (
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/xiaozhi-hub/hub/server"
)

// readmeSection returns the lines of README.md under the heading title, up
// to the next heading of the same level.
func readmeSection(t *testing.T, title string) []string {
	t.Helper()
	return docSection(t, "../README.md", title)
}

// docSection returns the lines of the Markdown file path under the level-2
// heading "## title", up to the next level-2 heading.
func docSection(t *testing.T, path, title string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	in := false
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "## ") {
			in = line == "## "+title
			continue
		}
		if in {
			out = append(out, line)
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s has no section %q", path, title)
	}
	return out
}

// Every setting of Config is in the settings table of docs/configuration.md
// (the reference the README points to), and every setting the table names
// exists, so the table cannot drift from the code.
func TestConfigurationListsEverySetting(t *testing.T) {
	inTable := map[string]bool{}
	name := regexp.MustCompile("`([a-z0-9-]+)`")
	for _, line := range docSection(t, "../docs/configuration.md", "Settings") {
		cells := strings.Split(line, "|")
		if !strings.HasPrefix(line, "| `") || len(cells) < 3 {
			continue
		}
		for _, m := range name.FindAllStringSubmatch(cells[1], -1) {
			inTable[m[1]] = true
		}
	}
	typ := reflect.TypeFor[server.Config]()
	known := map[string]bool{}
	for i := 0; i < typ.NumField(); i++ {
		key := typ.Field(i).Tag.Get("yaml")
		if key == "" || key == "-" {
			continue
		}
		known[key] = true
		if !inTable[key] {
			t.Errorf("docs/configuration.md's settings table (## Settings) lacks `%s`", key)
		}
	}
	for key := range inTable {
		if !known[key] {
			t.Errorf("docs/configuration.md's settings table names `%s`, which is not a setting", key)
		}
	}
}
