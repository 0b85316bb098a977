package secretfile

import (
	"errors"
	"fmt"
	"log/slog"
)

// AdminToken returns the hub's admin API token: configured (the api-token
// setting) when it is set, or the one kept at path, generated (mode 0600)
// on first start, when created is true: the caller shows it to the person
// starting the hub, once (never in the structured log). Either must have at
// least 16 characters.
func AdminToken(configured, path string, log *slog.Logger) (tok string, created bool, err error) {
	if configured != "" {
		if len(configured) < 16 {
			return "", false, errors.New("api-token: use at least 16 characters")
		}
		return configured, false, nil
	}
	tok, created, err = Load(path, 24, log)
	if err != nil {
		return "", false, fmt.Errorf("api token file: %w", err)
	}
	if !created && len(tok) < 16 {
		return "", false, fmt.Errorf("api token file %s holds a token shorter than 16 characters; delete it to generate a new one", path)
	}
	if !created {
		log.Debug("API token loaded", "path", path)
	}
	return tok, created, nil
}
