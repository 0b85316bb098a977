package services

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// ServerConfig is one MCP server the hub connects to, as written in the
// config file under mcp-servers:
//
//	mcp-servers:
//	  - name: home-assistant
//	    url: http://homeassistant.local:8123/api/mcp
//	    headers: {Authorization: "Bearer eyJ…"}
//	  - name: weather
//	    command: /usr/local/bin/weather-mcp
//	    args: [--units, metric]
//
// A url is Streamable HTTP; a command (with args) is started by the hub and
// spoken to over stdio (its stderr goes to the hub's log).
type ServerConfig struct {
	Name    string            `yaml:"name"`
	URL     string            `yaml:"url"`
	Headers map[string]string `yaml:"headers"`
	Command string            `yaml:"command"`
	Args    []string          `yaml:"args"`
}

// ServerKeys are the keys of one mcp-servers entry, for the config file's
// checks.
var ServerKeys = []string{"name", "url", "headers", "command", "args"}

// CheckServers says what is wrong with the mcp-servers setting, in the
// words of the settings, every problem at once.
func CheckServers(list []ServerConfig) error {
	var errs []error
	seen := map[string]bool{}
	for i, c := range list {
		at := fmt.Sprintf("mcp-servers: entry %d", i+1)
		if c.Name != "" {
			at = fmt.Sprintf("mcp-servers: %s", c.Name)
		}
		if err := CheckName(c.Name); err != nil {
			errs = append(errs, fmt.Errorf("%s: name: %s", at, nameRule))
		} else if seen[c.Name] {
			errs = append(errs, fmt.Errorf("%s: the name is used twice; each server needs its own", at))
		}
		seen[c.Name] = true
		switch {
		case c.URL == "" && c.Command == "":
			errs = append(errs, fmt.Errorf("%s: needs a url (Streamable HTTP, e.g. http://homeassistant.local:8123/api/mcp) or a command (stdio, with args)", at))
		case c.URL != "" && c.Command != "":
			errs = append(errs, fmt.Errorf("%s: has both url and command; a server is one or the other", at))
		case c.URL != "":
			if u, err := url.Parse(c.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				errs = append(errs, fmt.Errorf("%s: url %q is not an http:// or https:// URL", at, c.URL))
			}
			if len(c.Args) > 0 {
				errs = append(errs, fmt.Errorf("%s: args go with a command, not a url", at))
			}
		case c.Command != "":
			if len(c.Headers) > 0 {
				errs = append(errs, fmt.Errorf("%s: headers go with a url, not a command", at))
			}
		}
		for k, v := range c.Headers {
			if k == "" || strings.ContainsAny(k, " :\r\n") || strings.ContainsAny(v, "\r\n") {
				errs = append(errs, fmt.Errorf("%s: headers: %q is not a valid header name and value", at, k))
			}
		}
	}
	return errors.Join(errs...)
}

const nameRule = "1 to 32 lower-case letters, digits, '-' or '_', starting with a letter or digit, e.g. home-assistant"
