package secretfile

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
)

// AdminToken returns the hub's admin API token: configured (the api-token
// setting) when it is set, or the one kept at path, generated (mode 0600,
// printed once on stderr) on first start. Either must have at least 16
// characters.
func AdminToken(configured, path string, log *slog.Logger) (string, error) {
	if configured != "" {
		if len(configured) < 16 {
			return "", errors.New("api-token: use at least 16 characters")
		}
		return configured, nil
	}
	tok, created, err := Load(path, 24, log)
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
