package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/xiaozhi-hub/hub/server"
)

// hubFlags are the flags of the subcommands that talk to a running hub.
type hubFlags struct {
	url, token, dataDir string
}

func addHubFlags(fs *flag.FlagSet) *hubFlags {
	h := &hubFlags{}
	fs.StringVar(&h.url, "url", envOr("XZ_HUB_URL", defaultHubURL()), "the hub's base URL (env XZ_HUB_URL)")
	fs.StringVar(&h.url, "hub", envOr("XZ_HUB_URL", defaultHubURL()), "same as --url")
	fs.StringVar(&h.token, "token", os.Getenv("XZ_HUB_API_TOKEN"), "admin API token (env XZ_HUB_API_TOKEN; default: read from <data-dir>/"+server.TokenFile+")")
	fs.StringVar(&h.dataDir, "data-dir", envOr("XZ_HUB_DATA_DIR", server.DefaultConfig().DataDir), "the hub's data directory, for its token file (env XZ_HUB_DATA_DIR)")
	return h
}

// adminToken is --token, XZ_HUB_API_TOKEN, or the token file the hub wrote.
func (h *hubFlags) adminToken() (string, error) {
	if h.token != "" {
		return h.token, nil
	}
	path := filepath.Join(h.dataDir, server.TokenFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("no admin token: pass --token, set XZ_HUB_API_TOKEN, or point --data-dir at the hub's data directory (%v)", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// adminCommand parses the flags of "xiaozhi-hub <name> …" (the hub's,
// and those more adds) and returns its positional arguments (at least
// one), its usage and a client of the hub's API with the admin token;
// code >= 0 is the exit code to return at once.
func adminCommand(name, text string, args []string, stderr io.Writer, more func(*flag.FlagSet)) (c apiClient, pos []string, usage func(), code int) {
	fs := flag.NewFlagSet("xiaozhi-hub "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	usage = func() { fmt.Fprint(stderr, text); fs.PrintDefaults() }
	fs.Usage = usage
	hub := addHubFlags(fs)
	if more != nil {
		more(fs)
	}
	if pos, code = parseInterspersed(fs, args); code >= 0 {
		return c, nil, usage, code
	}
	if len(pos) == 0 {
		usage()
		return c, nil, usage, 2
	}
	token, err := hub.adminToken()
	if err != nil {
		fmt.Fprintf(stderr, "xiaozhi-hub: %v\n", err)
		return c, nil, usage, 2
	}
	return apiClient{base: strings.TrimSuffix(hub.url, "/"), token: token}, pos, usage, -1
}

// exitCode is a command's exit code for err (1, said on stderr; 0 for
// nil).
func exitCode(err error, stderr io.Writer) int {
	if err != nil {
		fmt.Fprintf(stderr, "xiaozhi-hub: %v\n", err)
		return 1
	}
	return 0
}

// parseInterspersed parses flags that may come before, between or after
// the positional arguments, and returns those. code is -1 on success, else
// the exit code (0 after --help).
func parseInterspersed(fs *flag.FlagSet, args []string) (pos []string, code int) {
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, 0
			}
			return nil, 2
		}
		if fs.NArg() == 0 {
			return pos, -1
		}
		pos, args = append(pos, fs.Arg(0)), fs.Args()[1:]
	}
}

// defaultHubURL is the loopback URL of a hub listening on XZ_HUB_LISTEN
// (or the default :8000).
func defaultHubURL() string {
	listen := envOr("XZ_HUB_LISTEN", server.DefaultConfig().Listen)
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return "http://127.0.0.1:8000"
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port)
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
