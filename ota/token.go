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

// Token prefixes mark the hub's device tokens and their format version.
// Tokens contain no space: the firmware prepends "Bearer " only then.
const (
	tokenPrefix       = "xzh2."
	legacyTokenPrefix = "xzh1." // before tokens were bound to the Client-Id
)

// signToken returns the device's token for its identity and current
// generation: "xzh2." + base64url(HMAC-SHA256(secret, "xiaozhi-hub device
// token 2\x00" + deviceID + "\x00" + clientID + "\x00" + generation)). A
// token presented with another Client-Id is refused. It does not expire:
// devices fetch a token only at boot and may stay up for months;
// revocation ends it.
func signToken(secret []byte, deviceID, clientID string, generation int64) string {
	return tokenPrefix + base64.RawURLEncoding.EncodeToString(tokenMAC(secret, deviceID, clientID, generation))
}

func tokenMAC(secret []byte, deviceID, clientID string, generation int64) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("xiaozhi-hub device token 2\x00" + deviceID + "\x00" + clientID + "\x00" + strconv.FormatInt(generation, 10)))
	return m.Sum(nil)
}

func legacyTokenMAC(secret []byte, deviceID string, generation int64) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("xiaozhi-hub device token\x00" + deviceID + "\x00" + strconv.FormatInt(generation, 10)))
	return m.Sum(nil)
}

// verifyToken reports whether tok is the token of the device with that
// Client-Id for generation, comparing in constant time. A token of the
// format before Client-Id binding (xzh1) is accepted too, for devices that
// have not rebooted since the upgrade: its caller has checked the Client-Id
// against the device's binding.
func verifyToken(secret []byte, deviceID, clientID string, generation int64, tok string) bool {
	mac := func(prefix string) []byte {
		rest, ok := strings.CutPrefix(tok, prefix)
		if !ok {
			return nil
		}
		got, err := base64.RawURLEncoding.DecodeString(rest)
		if err != nil {
			return nil
		}
		return got
	}
	if got := mac(tokenPrefix); got != nil {
		return hmac.Equal(got, tokenMAC(secret, deviceID, clientID, generation))
	}
	if got := mac(legacyTokenPrefix); got != nil {
		return hmac.Equal(got, legacyTokenMAC(secret, deviceID, generation))
	}
	return false
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
		log.Debug("generated the device token secret", "path", path)
	}
	return secret, nil
}
