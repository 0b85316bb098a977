package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"text/tabwriter"
	"time"
)

const devicesUsage = `usage: xiaozhi-hub devices COMMAND [flags]

Talks to a running hub over its API, with the admin token.

  pending                               activation codes waiting for approval
  approve CODE [--name N] [--room R]    approve the device showing CODE
  revoke DEVICE-ID                      revoke the device's tokens (it must be approved again)
  rebind DEVICE-ID [--client-id C]      bind a re-flashed device to its new Client-Id (default:
                                        the one its next OTA check or connection presents)

flags:
`

// devices runs "xiaozhi-hub devices …".
func devices(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var name, room, clientID *string
	c, pos, usage, code := adminCommand("devices", devicesUsage, args, stderr, func(fs *flag.FlagSet) {
		name = fs.String("name", "", "approve: name for the device")
		room = fs.String("room", "", "approve: room of the device")
		clientID = fs.String("client-id", "", "rebind: the device's new Client-Id (see its identity_refused events)")
	})
	if code >= 0 {
		return code
	}
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
	case pos[0] == "rebind" && len(pos) == 2:
		body := map[string]string{}
		if *clientID != "" {
			body["clientId"] = *clientID
		}
		if err = c.do(ctx, "POST", "/api/devices/"+url.PathEscape(pos[1])+"/rebind", body, nil); err == nil {
			fmt.Fprintf(stdout, "device %s re-bound; its old tokens no longer work, it gets a new one at its next boot\n", pos[1])
		}
	default:
		usage()
		return 2
	}
	return exitCode(err, stderr)
}

func (c apiClient) pending(ctx context.Context, w io.Writer) error {
	var out struct {
		Policy      string
		Activations []struct {
			Code, DeviceID, Board, Firmware, RemoteAddr string
			Expires                                     time.Time
			Rebind                                      bool
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
	rebind := false
	for _, a := range out.Activations {
		id := a.DeviceID
		if a.Rebind {
			id, rebind = id+" *", true
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", a.Code, id, a.Board, a.Firmware, a.RemoteAddr,
			time.Until(a.Expires).Round(time.Second))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if rebind {
		fmt.Fprintln(w, "* already approved with another Client-Id: approving re-binds it; do so only if the device was re-flashed and shows this code")
	}
	return nil
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
