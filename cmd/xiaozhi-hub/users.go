package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"golang.org/x/term"
)

const usersUsage = `usage: xiaozhi-hub users COMMAND [flags]

Talks to a running hub over its API, with the admin token.

  add NAME        make a user; the password is read from stdin (not echoed
                  on a terminal, asked twice there), at least 8 characters
  list            the users and their homes
  remove NAME     remove a user: their logins, tokens and places in homes end at once

flags:
`

// stdin is where "users add" reads the password (a variable for tests).
var stdin io.Reader = os.Stdin

// users runs "xiaozhi-hub users …".
func users(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c, pos, usage, code := adminCommand("users", usersUsage, args, stderr, nil)
	if code >= 0 {
		return code
	}
	var err error
	switch {
	case pos[0] == "add" && len(pos) == 2:
		var pw string
		if pw, err = readPassword(stdin, stderr); err == nil {
			if err = c.do(ctx, "POST", "/api/users", map[string]string{"name": pos[1], "password": pw}, nil); err == nil {
				fmt.Fprintf(stdout, "user %s added; they log in with POST /api/login or the dashboard\n", pos[1])
			}
		}
	case pos[0] == "list" && len(pos) == 1:
		err = c.listUsers(ctx, stdout)
	case pos[0] == "remove" && len(pos) == 2:
		if err = c.do(ctx, "DELETE", "/api/users/"+url.PathEscape(pos[1]), nil, nil); err == nil {
			fmt.Fprintf(stdout, "user %s removed\n", pos[1])
		}
	default:
		usage()
		return 2
	}
	return exitCode(err, stderr)
}

// readPassword reads a password: from a terminal without echo, twice;
// from anything else (a pipe, a file), its first line.
func readPassword(in io.Reader, prompt io.Writer) (string, error) {
	if f, ok := in.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		fmt.Fprint(prompt, "password: ")
		a, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprint(prompt, "\nagain: ")
		if err != nil {
			return "", err
		}
		b, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(prompt)
		if err != nil {
			return "", err
		}
		if string(a) != string(b) {
			return "", errors.New("the two passwords differ")
		}
		return string(a), nil
	}
	line, err := bufio.NewReader(io.LimitReader(in, 4096)).ReadString('\n')
	if err != nil && (err != io.EOF || line == "") {
		return "", fmt.Errorf("no password on stdin: %w", err)
	}
	return strings.TrimRight(line, "\r\n"), nil
}

func (c apiClient) listUsers(ctx context.Context, w io.Writer) error {
	var out struct {
		Users []struct {
			Name    string
			Created time.Time
			Homes   []struct{ Name, Role string }
		}
	}
	if err := c.do(ctx, "GET", "/api/users", nil, &out); err != nil {
		return err
	}
	if len(out.Users) == 0 {
		fmt.Fprintln(w, "no users yet: xiaozhi-hub users add NAME")
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "USER\tCREATED\tHOMES")
	for _, u := range out.Users {
		var homes []string
		for _, h := range u.Homes {
			homes = append(homes, h.Name+" ("+h.Role+")")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", u.Name, u.Created.Local().Format(time.DateTime), strings.Join(homes, ", "))
	}
	return tw.Flush()
}
