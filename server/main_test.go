package server_test

import (
	"testing"

	"go.uber.org/goleak"
)

// Every test stops its hub and devices; nothing may be left running.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
