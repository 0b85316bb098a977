package server

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/xiaozhi-hub/hub/secretfile"
)

// TokenFile is the admin token's file name inside the data directory.
const TokenFile = "api-token"

// adminToken returns the configured token, or the one kept in the data
// directory, generating it (mode 0600, printed once) on first start.
func adminToken(cfg Config, log *slog.Logger) (string, error) {
	if cfg.APIToken != "" {
		if len(cfg.APIToken) < 16 {
			return "", errors.New("api-token: use at least 16 characters")
		}
		return cfg.APIToken, nil
	}
	path := filepath.Join(cfg.DataDir, TokenFile)
	tok, created, err := secretfile.Load(path, 24, log)
	if err != nil {
		return "", fmt.Errorf("api token file: %w", err)
	}
	if !created {
		if len(tok) < 16 {
			return "", fmt.Errorf("api token file %s holds a token shorter than 16 characters; delete it to generate a new one", path)
		}
		log.Info("API token loaded", "path", path)
		return tok, nil
	}
	// Printed once, on purpose: it is the only time the token is shown.
	fmt.Fprintf(os.Stderr, "\nGenerated admin API token (saved to %s, shown only now):\n\n    %s\n\nUse it as: Authorization: Bearer %s\n\n", path, tok, tok)
	return tok, nil
}
