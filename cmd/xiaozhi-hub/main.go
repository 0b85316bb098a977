// Command xiaozhi-hub runs the hub (the default), or talks to a running one.
//
//	xiaozhi-hub [flags]          serve (see --help for every setting)
//	xiaozhi-hub devices pending|approve CODE|revoke ID|rebind ID   (see devices --help)
//	xiaozhi-hub chat "打开客厅的灯"                       ask the hub's agent (see chat --help)
//	xiaozhi-hub version
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

	"github.com/xiaozhi-hub/hub/server"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		switch args[0] {
		case "serve":
			return serve(ctx, args[1:], stderr)
		case "devices":
			return devices(ctx, args[1:], stdout, stderr)
		case "chat":
			return runChat(ctx, args[1:], stdout, stderr)
		case "version":
			fmt.Fprintln(stdout, server.Version)
			return 0
		default:
			fmt.Fprintf(stderr, "unknown command %q: use serve (the default), devices, chat or version\n", args[0])
			return 2
		}
	}
	return serve(ctx, args, stderr)
}

func serve(ctx context.Context, args []string, stderr io.Writer) int {
	cfg, err := server.LoadConfig(args, os.Getenv)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "xiaozhi-hub: %v\n", err)
		return 2
	}
	log := newLogger(cfg, stderr)
	h, err := server.Open(ctx, cfg, log)
	if err != nil {
		log.Error("cannot start", "err", err)
		return 1
	}
	if cfg.Demo > 0 {
		if err := startDemo(ctx, h, cfg, log); err != nil {
			log.Error("cannot start demo devices", "err", err)
		}
	}
	mctx, stopLimit := context.WithCancel(ctx)
	var limiting sync.WaitGroup
	limiting.Go(func() { _ = server.LimitMemory(mctx, cfg.MemoryLimit, log) }) // validated by LoadConfig
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

func startDemo(ctx context.Context, h *server.Hub, cfg server.Config, log *slog.Logger) error {
	if err := h.StartDemo(ctx, cfg.Demo); err != nil {
		return err
	}
	tok := "$(cat " + filepath.Join(cfg.DataDir, server.TokenFile) + ")"
	if cfg.APIToken != "" {
		tok = "<your --api-token>"
	}
	log.Info("demo devices are connecting; list them with",
		"command", fmt.Sprintf("curl -H \"Authorization: Bearer %s\" %s/api/devices", tok, h.URL()))
	return nil
}
