package server_test

import (
	"testing"

	"go.uber.org/goleak"
)

// Every test stops its hub and devices; nothing may be left running.
//
// Except two goroutines of nats-server itself: a file store it opens for a
// stream while it is shutting down (a node restarted, or crashed, while
// JetStream was still assigning it streams) keeps its state-flushing loop,
// and with it the shared access-time ticker. Seen once in several full
// runs, with no other goroutine of that server left: not a server the hub
// failed to stop.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreTopFunction("github.com/nats-io/nats-server/v2/server.(*fileStore).flushStreamStateLoop"),
		goleak.IgnoreTopFunction("github.com/nats-io/nats-server/v2/server/ats.Register.func1"),
	)
}
