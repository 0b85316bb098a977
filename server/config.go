package server

import (
	"github.com/xiaozhi-hub/hub/config"
	"github.com/xiaozhi-hub/hub/internal/datadir"
)

// Config is every setting of the hub: package config holds the settings,
// their defaults, their loading and their validation (config.Print writes
// them for --help).
type Config = config.Config

// TokenFile is the admin token's file name inside the data directory.
const TokenFile = datadir.TokenFile

// DefaultConfig returns the settings used when nothing else is given.
func DefaultConfig() Config { return config.Default() }

// LoadConfig builds the configuration from defaults, the config file named
// by --config or XZ_HUB_CONFIG, the environment and the flags in args.
func LoadConfig(args []string, getenv func(string) string) (Config, error) {
	return config.Load(args, getenv)
}
