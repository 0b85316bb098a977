package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/xiaozhi-hub/hub/server"
)

// onTerminal reports whether w is a terminal: the startup banner shows a
// newly generated admin token only there, so that it does not end up in
// whatever collects the logs of a service (`xiaozhi-hub token` prints it).
var onTerminal = isTerminal

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// writeBanner is the first thing a person starting the hub reads: where
// the dashboard is, where the admin token is, and the OTA URL to give a
// device. Plain text on stderr, before the structured log; the token itself
// only when this start generated it and w is a terminal.
func writeBanner(w io.Writer, s server.Startup, dataDir string) {
	var b strings.Builder
	fmt.Fprintf(&b, "\nxiaozhi-hub %s is running.\n\n", server.Version)
	for i, u := range s.URLs {
		label := "Dashboard:  "
		if i > 0 {
			label = "            "
		}
		fmt.Fprintf(&b, "  %s %s/\n", label, u)
	}
	tokenCmd := "xiaozhi-hub token --data-dir " + dataDir
	switch {
	case s.TokenFile == "":
		b.WriteString("  Admin token: the api-token you set\n")
	case s.NewToken != "" && onTerminal(w):
		fmt.Fprintf(&b, "  Admin token: %s\n               (generated now, saved in %s; print it again with: %s)\n", s.NewToken, s.TokenFile, tokenCmd)
	default:
		fmt.Fprintf(&b, "  Admin token: in %s; print it with: %s\n", s.TokenFile, tokenCmd)
	}
	if len(s.URLs) > 0 {
		fmt.Fprintf(&b, "  Devices:     set the firmware's OTA URL to %s/xiaozhi/ota/\n", s.URLs[0])
	}
	b.WriteString("\n")
	io.WriteString(w, b.String())
}

// tokenCommand prints the admin token of the hub whose settings args (and
// the environment, and --config) give: the api-token when set, else the
// token kept in the data directory.
func tokenCommand(args []string, stdout, stderr io.Writer) int {
	cfg, err := server.LoadConfig(args, os.Getenv)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(stdout, "usage: xiaozhi-hub token [--data-dir DIR | --config FILE]\n\nPrints the admin API token of the hub using that data directory (or its api-token setting).")
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "xiaozhi-hub token: %v\n", err)
		return 2
	}
	if cfg.APIToken != "" {
		fmt.Fprintln(stdout, cfg.APIToken)
		return 0
	}
	path := filepath.Join(cfg.DataDir, server.TokenFile)
	b, err := os.ReadFile(path)
	if err != nil {
		fmt.Fprintf(stderr, "xiaozhi-hub token: %v (the hub writes it on its first start; is --data-dir right?)\n", err)
		return 1
	}
	fmt.Fprintln(stdout, strings.TrimSpace(string(b)))
	return 0
}
