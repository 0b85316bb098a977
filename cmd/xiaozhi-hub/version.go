package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/xiaozhi-hub/hub/opus"
	"github.com/xiaozhi-hub/hub/server"
)

// buildRevision is the source revision when the build has no VCS
// information (the Dockerfile sets it with -ldflags -X main.buildRevision=).
var buildRevision string

// buildInfo is what the binary knows about the source it was built from.
type buildInfo struct {
	Module, Version           string
	Revision, Time, GoVersion string
	Modified, FromVCS         bool
}

func readBuildInfo() buildInfo {
	b := buildInfo{Module: "github.com/xiaozhi-hub/hub", Version: server.Version, Revision: buildRevision, GoVersion: runtime.Version()}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return b
	}
	b.Module = info.Main.Path
	if b.Version == "dev" && info.Main.Version != "" && info.Main.Version != "(devel)" {
		b.Version = info.Main.Version
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Revision = s.Value
		case "vcs.time":
			b.Time = s.Value
		case "vcs.modified":
			b.Modified, b.FromVCS = s.Value == "true", true
		}
	}
	return b
}

// setVersion makes server.Version (announced to devices and MCP clients)
// the module version when the build did not set one with -ldflags.
func setVersion() {
	if server.Version == "dev" {
		server.Version = readBuildInfo().Version
	}
}

// versionText is what `xiaozhi-hub version` prints.
func versionText() string {
	b := readBuildInfo()
	var sb strings.Builder
	fmt.Fprintf(&sb, "xiaozhi-hub %s (%s)\n", b.Version, b.Module)
	rev := b.Revision
	if rev == "" {
		rev = "unknown (built without VCS information, e.g. go run or -buildvcs=false)"
	}
	fmt.Fprintf(&sb, "revision: %s\n", rev)
	if b.Time != "" {
		fmt.Fprintf(&sb, "committed: %s\n", b.Time)
	}
	if b.FromVCS {
		fmt.Fprintf(&sb, "modified: %t\n", b.Modified)
	}
	fmt.Fprintf(&sb, "go: %s %s/%s\n", b.GoVersion, runtime.GOOS, runtime.GOARCH)
	fmt.Fprintf(&sb, "opus: %s\n", opus.Implementation)
	return sb.String()
}
