package catalog_test

import (
	"context"
	"testing"

	"go.uber.org/goleak"
)

// Every test closes what it starts; nothing may be left running.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// ctx0 carries no principal: the hub's own view, every device.
var ctx0 = context.Background()
