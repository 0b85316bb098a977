// Package secretfile keeps a secret in a file only its owner can read: the
// hub's admin API token and its device-token signing key.
package secretfile

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"strings"
)

// Load returns the text kept at path, trimmed. When the file does not
// exist it writes n random bytes there as hex, with mode 0600, created
// exclusively and synced, and reports created. A file that others can read
// is set to 0600 first, with a warning. The caller checks the text's format.
func Load(path string, n int, log *slog.Logger) (text string, created bool, err error) {
	data, err := os.ReadFile(path)
	if err == nil {
		if info, serr := os.Stat(path); serr == nil && info.Mode().Perm()&0o077 != 0 {
			log.Warn("a secret file is readable by others; setting its mode to 0600", "path", path)
			if err := os.Chmod(path, 0o600); err != nil {
				return "", false, err
			}
		}
		return strings.TrimSpace(string(data)), false, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return "", false, err
	}
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", false, err
	}
	text = hex.EncodeToString(b)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", false, err
	}
	_, err = f.WriteString(text + "\n")
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", false, err
	}
	return text, true, nil
}
