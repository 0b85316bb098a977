package catalog_test

import (
	"testing"

	"go.uber.org/goleak"
)

// Every test closes what it starts; nothing may be left running.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
