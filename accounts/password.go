package accounts

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"strings"
	"sync"

	"golang.org/x/crypto/argon2"
)

// Passwords are hashed with argon2id (RFC 9106) at OWASP's recommended
// minimum for it (19 MiB, 2 passes, 1 lane), stored in the PHC string
// format so that stronger parameters can come later without breaking old
// hashes: $argon2id$v=19$m=19456,t=2,p=1$<salt>$<hash>.
const (
	argonMemory  = 19 * 1024 // KiB
	argonTime    = 2
	argonThreads = 1
	argonKeyLen  = 32
	saltLen      = 16

	// MinPassword and MaxPassword bound a password's length (characters,
	// bytes): long enough to resist guessing, short enough that hashing
	// it costs what any other does.
	MinPassword = 8
	MaxPassword = 256
)

var b64 = base64.RawStdEncoding

// hashPassword returns pw's argon2id hash in the PHC format.
func hashPassword(pw string) (string, error) {
	salt := make([]byte, saltLen)
	if _, err := rand.Read(salt); err != nil {
		return "", err
	}
	key := argon2.IDKey([]byte(pw), salt, argonTime, argonMemory, argonThreads, argonKeyLen)
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, argonMemory, argonTime, argonThreads,
		b64.EncodeToString(salt), b64.EncodeToString(key)), nil
}

// verifyPassword reports whether pw matches the PHC hash phc. A hash it
// cannot read matches nothing. Parameters are bounded so that a tampered
// record cannot make one check cost more than a few of ours.
func verifyPassword(phc, pw string) bool {
	parts := strings.Split(phc, "$")
	if len(parts) != 6 || parts[1] != "argon2id" || parts[2] != fmt.Sprintf("v=%d", argon2.Version) {
		return false
	}
	var m, t uint32
	var p uint8
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &m, &t, &p); err != nil ||
		m == 0 || m > 4*argonMemory || t == 0 || t > 4*argonTime || p == 0 || p > 4 {
		return false
	}
	salt, err1 := b64.DecodeString(parts[4])
	want, err2 := b64.DecodeString(parts[5])
	if err1 != nil || err2 != nil || len(want) < 16 || len(want) > 64 {
		return false
	}
	got := argon2.IDKey([]byte(pw), salt, t, m, p, uint32(len(want)))
	return subtle.ConstantTimeCompare(got, want) == 1
}

// decoy is a hash checked for names that are not users, so that an
// unknown name costs the same time as a wrong password.
var decoy = sync.OnceValue(func() string {
	h, err := hashPassword("not a password: only here to take the time a real check takes")
	if err != nil {
		panic(err)
	}
	return h
})

// hasher bounds how many argon2id computations run at once (each holds
// argonMemory), so that a burst of logins costs a bounded amount of
// memory and leaves CPU for the devices.
type hasher chan struct{}

func (h hasher) do(ctx context.Context, f func()) error {
	select {
	case h <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-h }()
	f()
	return nil
}
