package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// "xiaozhi-hub users add NAME" makes a user on a running hub (the password
// from stdin, here a pipe), who can then log in; list and remove.
func TestUsersAddListRemove(t *testing.T) {
	h, dir := startHub(t)
	cli := func(in string, args ...string) (int, string) {
		stdin = strings.NewReader(in)
		var out, errb bytes.Buffer
		args = append(args, "--url", h.URL(), "--data-dir", dir)
		rc := run(context.Background(), append([]string{"users"}, args...), &out, &errb)
		return rc, out.String() + errb.String()
	}
	if rc, out := cli("alice-password\n", "add", "alice"); rc != 0 || !strings.Contains(out, "alice added") {
		t.Fatalf("add: %d %s", rc, out)
	}
	if rc, out := cli("short\n", "add", "bob"); rc != 1 || !strings.Contains(out, "at least 8") {
		t.Fatalf("a short password: %d %s", rc, out)
	}
	if rc, out := cli("", "add", "bob"); rc != 1 || !strings.Contains(out, "no password") {
		t.Fatalf("no password: %d %s", rc, out)
	}
	if rc, out := cli("", "list"); rc != 0 || !strings.Contains(out, "alice") || strings.Contains(out, "bob") {
		t.Fatalf("list: %d %s", rc, out)
	}
	if rc, out := cli("", "remove", "alice"); rc != 0 || !strings.Contains(out, "removed") {
		t.Fatalf("remove: %d %s", rc, out)
	}
	if rc, out := cli("", "remove", "alice"); rc != 1 || !strings.Contains(out, "alice") {
		t.Fatalf("remove again: %d %s", rc, out)
	}
}
