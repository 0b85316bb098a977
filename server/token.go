package server

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
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
	data, err := os.ReadFile(path)
	if err == nil {
		if info, serr := os.Stat(path); serr == nil && info.Mode().Perm()&0o077 != 0 {
			log.Warn("the API token file is readable by others; fixing its mode to 0600", "path", path)
			if cerr := os.Chmod(path, 0o600); cerr != nil {
				return "", fmt.Errorf("api token file: %w", cerr)
			}
		}
		tok := strings.TrimSpace(string(data))
		if len(tok) < 16 {
			return "", fmt.Errorf("api token file %s holds a token shorter than 16 characters; delete it to generate a new one", path)
		}
		log.Info("API token loaded", "path", path)
		return tok, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("api token file: %w", err)
	}
	var b [24]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	tok := hex.EncodeToString(b[:])
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", fmt.Errorf("api token file: %w", err)
	}
	if _, err := f.WriteString(tok + "\n"); err != nil {
		f.Close()
		return "", fmt.Errorf("api token file: %w", err)
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("api token file: %w", err)
	}
	// Printed once, on purpose: it is the only time the token is shown.
	fmt.Fprintf(os.Stderr, "\nGenerated admin API token (saved to %s, shown only now):\n\n    %s\n\nUse it as: Authorization: Bearer %s\n\n", path, tok, tok)
	return tok, nil
}
