package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/xiaozhi-hub/hub/server"
)

const devicesUsage = `usage: xiaozhi-hub devices COMMAND [flags]

Talks to a running hub over its API, with the admin token.

  pending                               activation codes waiting for approval
  approve CODE [--name N] [--room R]    approve the device showing CODE
  revoke DEVICE-ID                      revoke the device's tokens (it must be approved again)

flags:
`

// devices runs "xiaozhi-hub devices …".
func devices(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("xiaozhi-hub devices", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, devicesUsage); fs.PrintDefaults() }
	hubURL := fs.String("url", envOr("XZ_HUB_URL", defaultHubURL()), "the hub's base URL (env XZ_HUB_URL)")
	token := fs.String("token", os.Getenv("XZ_HUB_API_TOKEN"), "admin API token (env XZ_HUB_API_TOKEN; default: read from <data-dir>/api-token)")
	dataDir := fs.String("data-dir", envOr("XZ_HUB_DATA_DIR", server.DefaultConfig().DataDir), "the hub's data directory, for its token file (env XZ_HUB_DATA_DIR)")
	name := fs.String("name", "", "approve: name for the device")
	room := fs.String("room", "", "approve: room of the device")
	// Flags may come before or after the positional arguments.
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return 0
			}
			return 2
		}
		if fs.NArg() == 0 {
			break
		}
		pos, args = append(pos, fs.Arg(0)), fs.Args()[1:]
	}
	if len(pos) == 0 {
		fs.Usage()
		return 2
	}
	if *token == "" {
		data, err := os.ReadFile(filepath.Join(*dataDir, server.TokenFile))
		if err != nil {
			fmt.Fprintf(stderr, "xiaozhi-hub: no admin token: use --token or XZ_HUB_API_TOKEN, or --data-dir of the hub (%v)\n", err)
			return 2
		}
		*token = strings.TrimSpace(string(data))
	}
	c := apiClient{base: strings.TrimSuffix(*hubURL, "/"), token: *token}
	var err error
	switch {
	case pos[0] == "pending" && len(pos) == 1:
		err = c.pending(ctx, stdout)
	case pos[0] == "approve" && len(pos) == 2:
		body := map[string]string{}
		if *name != "" {
			body["name"] = *name
		}
		if *room != "" {
			body["room"] = *room
		}
		var out struct {
			Activation struct{ Code, DeviceID, Board string }
		}
		if err = c.do(ctx, "POST", "/api/activations/"+url.PathEscape(pos[1])+"/approve", body, &out); err == nil {
			fmt.Fprintf(stdout, "approved device %s (code %s); it gets its token at its next check, within seconds\n",
				out.Activation.DeviceID, out.Activation.Code)
		}
	case pos[0] == "revoke" && len(pos) == 2:
		if err = c.do(ctx, "POST", "/api/devices/"+url.PathEscape(pos[1])+"/token/revoke", nil, nil); err == nil {
			fmt.Fprintf(stdout, "revoked the tokens of device %s\n", pos[1])
		}
	default:
		fs.Usage()
		return 2
	}
	if err != nil {
		fmt.Fprintf(stderr, "xiaozhi-hub: %v\n", err)
		return 1
	}
	return 0
}

func (c apiClient) pending(ctx context.Context, w io.Writer) error {
	var out struct {
		Policy      string
		Activations []struct {
			Code, DeviceID, Board, Firmware, RemoteAddr string
			Expires                                     time.Time
		}
	}
	if err := c.do(ctx, "GET", "/api/activations", nil, &out); err != nil {
		return err
	}
	if len(out.Activations) == 0 {
		fmt.Fprintf(w, "no device is waiting for approval (device-auth: %s)\n", out.Policy)
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CODE\tDEVICE\tBOARD\tFIRMWARE\tFROM\tEXPIRES IN")
	for _, a := range out.Activations {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", a.Code, a.DeviceID, a.Board, a.Firmware, a.RemoteAddr,
			time.Until(a.Expires).Round(time.Second))
	}
	return tw.Flush()
}

type apiClient struct{ base, token string }

// do makes one API request and decodes the answer into out (if not nil);
// error answers become errors carrying the hub's message.
func (c apiClient) do(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("cannot reach the hub (is it running? use --url): %w", err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if err != nil {
		return err
	}
	if res.StatusCode/100 != 2 {
		var e struct{ Error struct{ Message string } }
		if json.Unmarshal(data, &e) == nil && e.Error.Message != "" {
			return fmt.Errorf("%s (HTTP %d)", e.Error.Message, res.StatusCode)
		}
		return fmt.Errorf("%s %s: HTTP %d", method, path, res.StatusCode)
	}
	if out != nil {
		return json.Unmarshal(data, out)
	}
	return nil
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
