package registry_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/registry"
	"github.com/xiaozhi-hub/hub/store"
)

// Arguments is the one place where nothing and null become {}, for every
// boundary (API, catalog) and every kind of call (MCP tools, IoT methods).
func TestArguments(t *testing.T) {
	for in, want := range map[string]string{``: `{}`, `null`: `{}`, ` null `: `{}`, `{"a":1}`: `{"a":1}`, ` {} `: `{}`} {
		got, err := registry.Arguments([]byte(in))
		if err != nil || string(got) != want {
			t.Errorf("Arguments(%q) = %s, %v; want %s", in, got, err, want)
		}
	}
	for in, kind := range map[string]string{`[1]`: "an array", `"x"`: "a string", `true`: "a boolean", `5`: "a number"} {
		_, err := registry.Arguments([]byte(in))
		if hub.ErrorCode(err) != hub.EINVALID || !strings.Contains(err.Error(), kind) {
			t.Errorf("Arguments(%q) = %v; want EINVALID naming %s", in, err, kind)
		}
	}
}

// The registry's errors reach people through the API and language models
// through the catalog: they say what is wrong in the registry's own terms,
// with no REST route (each boundary adds its own pointer), and they are
// recognisable with errors.Is.
func TestRegistryErrorsCarryNoRoutes(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "hub.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	reg := registry.New(st, registry.Options{})
	defer reg.Close()
	_, err = reg.CallTool(ctx, registry.CallRequest{DeviceID: "aa:00:00:00:00:09", Tool: "self.x"})
	if !errors.Is(err, registry.ErrUnknownDevice) || strings.Contains(err.Error(), "/api") {
		t.Errorf("unknown device: %v", err)
	}
	_, err = reg.Device("aa:00:00:00:00:09")
	if !errors.Is(err, registry.ErrUnknownDevice) || strings.Contains(err.Error(), "/api") {
		t.Errorf("unknown device: %v", err)
	}
	_, err = reg.CallTool(ctx, registry.CallRequest{DeviceID: "aa:00:00:00:00:09", Timeout: -1})
	if !errors.Is(err, registry.ErrTimeoutRange) || hub.ErrorCode(err) != hub.EINVALID {
		t.Errorf("negative timeout: %v", err)
	}
}
