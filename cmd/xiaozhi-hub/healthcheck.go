package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"
)

// defaultHealthURL is XZ_HUB_URL, or the loopback address of the port in
// XZ_HUB_LISTEN (which the container image sets), or port 8000.
func defaultHealthURL(getenv func(string) string) string {
	if u := getenv("XZ_HUB_URL"); u != "" {
		return u
	}
	port := "8000"
	if _, p, err := net.SplitHostPort(getenv("XZ_HUB_LISTEN")); err == nil && p != "" && p != "0" {
		port = p
	}
	return "http://127.0.0.1:" + port
}

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
	base := fs.String("url", defaultHealthURL(os.Getenv), "the hub's base URL (env XZ_HUB_URL; default: port of XZ_HUB_LISTEN on 127.0.0.1)")
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
