// Command xiaozhi-hub runs the hub (the default), or talks to a running one.
//
//	xiaozhi-hub [flags]          serve (see --help for every setting)
//	xiaozhi-hub devices pending|approve CODE|revoke ID|rebind ID   (see devices --help)
//	xiaozhi-hub users add NAME|list|remove NAME           (see users --help)
//	xiaozhi-hub chat "打开客厅的灯"                       ask the hub's agent (see chat --help)
//	xiaozhi-hub token [--data-dir DIR]                    print the admin API token
//	xiaozhi-hub version                                   (also --version)
//	xiaozhi-hub healthcheck [--url URL]                   exit 0 when /healthz answers 200
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/xiaozhi-hub/hub/config"
	"github.com/xiaozhi-hub/hub/demo"
	"github.com/xiaozhi-hub/hub/internal/memlimit"
	"github.com/xiaozhi-hub/hub/server"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	setVersion()
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		switch args[0] {
		case "serve":
			return serve(ctx, args[1:], stdout, stderr)
		case "devices":
			return devices(ctx, args[1:], stdout, stderr)
		case "users":
			return users(ctx, args[1:], stdout, stderr)
		case "chat":
			return runChat(ctx, args[1:], stdout, stderr)
		case "token":
			return tokenCommand(args[1:], stdout, stderr)
		case "version":
			fmt.Fprint(stdout, versionText())
			return 0
		case "healthcheck":
			return healthcheck(ctx, args[1:], stdout, stderr)
		case "help":
			usage(stdout)
			return 0
		default:
			fmt.Fprintf(stderr, "unknown command %q: use serve (the default), devices, users, chat, token, healthcheck, version or help\n", args[0])
			return 2
		}
	}
	if len(args) == 1 && (args[0] == "--version" || args[0] == "-version") {
		fmt.Fprint(stdout, versionText())
		return 0
	}
	return serve(ctx, args, stdout, stderr)
}

const commandsUsage = `usage: xiaozhi-hub [COMMAND] [flags]

Commands:
  serve         run the hub (the default when no command is given)
  devices       approve, revoke or re-bind devices on a running hub (devices --help)
  users         add, list or remove the people of a running hub (users --help)
  chat          ask a running hub's agent, e.g. chat "打开客厅的灯" (chat --help)
  token         print the admin API token (from --data-dir, or the api-token setting)
  healthcheck   GET /healthz of a running hub; exit 0 if healthy, 1 if not (healthcheck --help)
  version       print the version and the source revision it was built from (also --version)
  help          print this help

Settings of serve (flag, environment variable, or key in the --config file):
`

func usage(w io.Writer) {
	fmt.Fprint(w, commandsUsage)
	config.Print(w)
}

func serve(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, err := server.LoadConfig(args, os.Getenv)
	if errors.Is(err, flag.ErrHelp) {
		usage(stdout)
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "xiaozhi-hub: %v\n", err)
		return 2
	}
	log := newLogger(cfg, stderr)
	h, err := server.OpenWithSources(ctx, cfg, config.Sources(cfg, args, os.Getenv), log)
	if err != nil {
		log.Error("cannot start", "err", err)
		return 1
	}
	logStartup(h, cfg, log, stderr)
	if cfg.Demo > 0 {
		stopDemo, err := startDemo(ctx, h, cfg, log)
		if err != nil {
			log.Error("cannot start demo devices", "err", err)
		} else {
			defer stopDemo()
		}
	}
	mctx, stopLimit := context.WithCancel(ctx)
	var limiting sync.WaitGroup
	limiting.Go(func() { _ = memlimit.Run(mctx, cfg.MemoryLimit, log) }) // validated by LoadConfig
	defer limiting.Wait()
	defer stopLimit()
	if err := h.Run(ctx); err != nil {
		log.Error("hub stopped", "err", err)
		return 1
	}
	return 0
}

func newLogger(cfg server.Config, w io.Writer) *slog.Logger {
	var level slog.Level
	if err := level.UnmarshalText([]byte(cfg.LogLevel)); err != nil {
		level = slog.LevelInfo
	}
	opts := &slog.HandlerOptions{Level: level}
	if cfg.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

func startDemo(ctx context.Context, h *server.Hub, cfg server.Config, log *slog.Logger) (stop func(), err error) {
	stop, err = demo.Start(ctx, h, cfg.Demo, log)
	if err != nil {
		return nil, err
	}
	tok := "$(cat " + filepath.Join(cfg.DataDir, server.TokenFile) + ")"
	if cfg.APIToken != "" {
		tok = "<your --api-token>"
	}
	log.Info("demo devices are connecting; list them with",
		"command", fmt.Sprintf("curl -H \"Authorization: Bearer %s\" %s/api/devices", tok, h.URL()))
	return stop, nil
}

// logStartup writes the banner for a person (writeBanner), then the
// structured line saying where the dashboard is and which outside services
// the hub will use, so that an operator sees at once what is missing.
func logStartup(h *server.Hub, cfg server.Config, log *slog.Logger, stderr io.Writer) {
	s := h.Startup()
	writeBanner(stderr, s, cfg.DataDir)
	log.Info("xiaozhi-hub ready", "version", server.Version, "dashboard", s.Dashboard,
		"data", cfg.DataDir, "llm", s.LLM, "speech", s.Speech)
}
