package ota

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"github.com/xiaozhi-hub/hub/secretfile"
	"log/slog"
	"strconv"
	"strings"
)

// tokenPrefix marks the hub's device tokens (and their format version).
// Tokens contain no space: the firmware prepends "Bearer " only then.
const tokenPrefix = "xzh1."

// signToken returns the device's token for its current generation:
// "xzh1." + base64url(HMAC-SHA256(secret, "xiaozhi-hub device token\x00" +
// deviceID + "\x00" + generation)). It does not expire: devices fetch a
// token only at boot and may stay up for months; revocation ends it.
func signToken(secret []byte, deviceID string, generation int64) string {
	return tokenPrefix + base64.RawURLEncoding.EncodeToString(tokenMAC(secret, deviceID, generation))
}

func tokenMAC(secret []byte, deviceID string, generation int64) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("xiaozhi-hub device token\x00" + deviceID + "\x00" + strconv.FormatInt(generation, 10)))
	return m.Sum(nil)
}

// verifyToken reports whether tok is the device's token for generation,
// comparing in constant time.
func verifyToken(secret []byte, deviceID string, generation int64, tok string) bool {
	rest, ok := strings.CutPrefix(tok, tokenPrefix)
	if !ok {
		return false
	}
	got, err := base64.RawURLEncoding.DecodeString(rest)
	if err != nil {
		return false
	}
	return hmac.Equal(got, tokenMAC(secret, deviceID, generation))
}

// loadSecret reads the signing secret (hex, at least 32 bytes) from path,
// generating it with mode 0600 when the file does not exist. Deleting the
// file invalidates every token issued so far.
func loadSecret(path string, log *slog.Logger) ([]byte, error) {
	text, created, err := secretfile.Load(path, 32, log)
	if err != nil {
		return nil, fmt.Errorf("device secret: %w", err)
	}
	secret, derr := hex.DecodeString(text)
	if derr != nil || len(secret) < 32 {
		return nil, fmt.Errorf("device secret file %s is damaged (want 64 hex digits); delete it to generate a new one (devices then need to reboot)", path)
	}
	if created {
		log.Info("generated the device token secret", "path", path)
	}
	return secret, nil
}
