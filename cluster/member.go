package cluster

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go"
)

// JoinOptions say how a hub joins the cluster: through the NATS node it
// runs in its own process (Embedded), or through a NATS cluster (URLs).
type JoinOptions struct {
	Node     Options          // the hub node's (its name is also the NATS connection's)
	Embedded *EmbeddedOptions // nil: connect to URLs
	URLs     []string
}

// Member is a hub's part in the cluster: its NATS connection, the
// embedded NATS node if it runs one, and its Node.
type Member struct {
	Node     *Node
	nc       *nats.Conn
	embedded *Embedded // nil with an external NATS
}

// Join connects to NATS (starting the embedded node first, if asked) and
// opens the node's shared buckets (Open). Start the Node to serve.
func Join(ctx context.Context, o JoinOptions) (*Member, error) {
	m := &Member{}
	client := "xiaozhi-hub " + o.Node.Name
	var err error
	if o.Embedded != nil {
		if m.embedded, err = StartEmbedded(*o.Embedded); err != nil {
			return nil, err
		}
		m.nc, err = m.embedded.Connect(client)
	} else {
		m.nc, err = Dial(o.URLs, client)
	}
	if err != nil {
		m.Close()
		return nil, fmt.Errorf("cluster: %w", err)
	}
	if m.Node, err = Open(ctx, m.nc, o.Node); err != nil {
		m.Close()
		return nil, err
	}
	return m, nil
}

// Close leaves the cluster (Node.Close) and stops NATS; call it after the
// registry has closed.
func (m *Member) Close() {
	if m.Node != nil {
		m.Node.Close()
	}
	if m.nc != nil {
		m.nc.Drain()
		m.nc.Close()
	}
	if m.embedded != nil {
		m.embedded.Shutdown()
	}
}

// Crash leaves as a killed process would, for failure tests: NATS goes
// first, so the node hands nothing over (its devices' claims and its lease
// are left to expire). Close must not follow.
func (m *Member) Crash() {
	if m.embedded != nil {
		m.embedded.Shutdown()
	}
	m.nc.Close()
	m.Node.Abandon()
}

// Connected reports whether the connection to NATS is up; without it the
// node cannot change the shared state.
func (m *Member) Connected() bool { return m.nc.IsConnected() }

// Status is the NATS connection's state in words (CONNECTED, RECONNECTING…).
func (m *Member) Status() string { return m.nc.Status().String() }
