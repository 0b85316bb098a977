package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

const healthcheckUsage = `usage: xiaozhi-hub healthcheck [--url URL] [--timeout D]

GETs URL/healthz and exits 0 when the hub answers 200, 1 otherwise (printing
why). For container health checks: the image has no curl.

flags:
`

// healthcheck runs "xiaozhi-hub healthcheck".
func healthcheck(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("xiaozhi-hub healthcheck", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, healthcheckUsage); fs.PrintDefaults() }
	def := os.Getenv("XZ_HUB_URL")
	if def == "" {
		def = "http://127.0.0.1:8000"
	}
	base := fs.String("url", def, "the hub's base URL (env XZ_HUB_URL)")
	timeout := fs.Duration("timeout", 5*time.Second, "give up after this long")
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(*base, "/")+"/healthz", nil)
	if err != nil {
		fmt.Fprintf(stderr, "xiaozhi-hub healthcheck: %v\n", err)
		return 2
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Fprintf(stderr, "xiaozhi-hub healthcheck: %v\n", err)
		return 1
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		fmt.Fprintf(stderr, "xiaozhi-hub healthcheck: %s: %s\n", resp.Status, strings.TrimSpace(string(body)))
		return 1
	}
	fmt.Fprintf(stdout, "healthy: %s\n", strings.TrimSpace(string(body)))
	return 0
}
