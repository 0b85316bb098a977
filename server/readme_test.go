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
	data, err := os.ReadFile("../README.md")
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
		t.Fatalf("README.md has no section %q", title)
	}
	return out
}

// Every setting of Config is in the README's settings table, and every
// setting the table names exists, so the table cannot drift from the code.
func TestReadmeListsEverySetting(t *testing.T) {
	inTable := map[string]bool{}
	name := regexp.MustCompile("`([a-z0-9-]+)`")
	for _, line := range readmeSection(t, "Configuration") {
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
			t.Errorf("README.md's settings table (## Configuration) lacks `%s`", key)
		}
	}
	for key := range inTable {
		if !known[key] {
			t.Errorf("README.md's settings table names `%s`, which is not a setting", key)
		}
	}
}
