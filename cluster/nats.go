package cluster

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strconv"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// EmbeddedOptions configure the NATS node a hub runs in its own process
// (cluster-nats: embedded): one node alone, or one of several joined by
// routes for a small cluster without a separate NATS deployment.
type EmbeddedOptions struct {
	Name     string // the node's server name (the hub node's name)
	StoreDir string // JetStream's files
	// Listen is where other NATS nodes' routes reach this one (host:port;
	// "" for a node alone). Peers are the other nodes' route URLs
	// (nats://host:port).
	Listen string
	Peers  []string
	// Secret authenticates the routes between nodes: a node that does not
	// present it cannot join (and read the shared state). Required with
	// Listen.
	Secret string
	// ClientListen, if set, also serves NATS clients (the nats CLI, a
	// monitoring tool) on host:port; they log in as user xiaozhi-hub with
	// Secret, which it therefore requires. The hub itself connects
	// in-process.
	ClientListen string
	Logger       *slog.Logger
}

// Embedded is a running NATS node.
type Embedded struct {
	srv      *server.Server
	password string // of user natsUser, for clients
}

// natsUser is the user of the embedded node's routes and clients.
const natsUser = "xiaozhi-hub"

// StartEmbedded starts a NATS node with JetStream and waits until it
// takes connections.
func StartEmbedded(o EmbeddedOptions) (*Embedded, error) {
	opts := &server.Options{
		ServerName: o.Name, JetStream: true, StoreDir: o.StoreDir, NoSigs: true, NoLog: true,
		DontListen: o.ClientListen == "" && o.Listen == "",
		// JetStream needs a limit it can check against the machine.
		JetStreamMaxMemory: 256 << 20,
	}
	// Every client logs in, even on loopback: what the node holds (the
	// device-token secret, grants) and the devices' subjects are the
	// admin's. Without a client listener only the hub connects, with a
	// password of its own.
	password := o.Secret
	if o.ClientListen != "" && len(password) < 16 {
		return nil, errors.New("cluster-nats-listen: NATS clients there log in as user xiaozhi-hub with cluster-secret; set a cluster-secret of at least 16 characters")
	}
	if password == "" {
		password = hex.EncodeToString(randomKey())
	}
	opts.Username, opts.Password = natsUser, password
	if o.ClientListen == "" && o.Listen != "" {
		// NATS starts its routes only once its client listener runs: a
		// clustered node gets one on loopback, on a port of the system's
		// choosing (nothing reachable from outside).
		opts.Host, opts.Port = "127.0.0.1", server.RANDOM_PORT
	}
	if o.ClientListen != "" {
		host, port, err := splitHostPort(o.ClientListen)
		if err != nil {
			return nil, fmt.Errorf("cluster-nats-listen: %w", err)
		}
		opts.Host, opts.Port = host, port
	}
	if o.Listen != "" {
		host, port, err := splitHostPort(o.Listen)
		if err != nil {
			return nil, fmt.Errorf("cluster-listen: %w", err)
		}
		if len(o.Secret) < 16 {
			return nil, errors.New("cluster-secret: the nodes' routes need a shared secret of at least 16 characters")
		}
		// One route per pair of nodes (PoolSize -1), not NATS's default
		// pool of three: with client logins on, the pooled routes left
		// core NATS (heartbeats, calls to devices on other nodes) without
		// interest in 3 of about 40 test cluster starts, while JetStream
		// worked; with one route, 0 of 20 (and 0 of 20 without logins).
		opts.Cluster = server.ClusterOpts{Name: "xiaozhi-hub", Host: host, Port: port, Username: natsUser, Password: o.Secret, PoolSize: -1}
		for _, p := range o.Peers {
			u, err := url.Parse(p)
			if err != nil || u.Host == "" {
				return nil, fmt.Errorf("cluster-peers: %q is not a route URL such as nats://hub-2:6222", p)
			}
			u.User = url.UserPassword(natsUser, o.Secret)
			opts.Routes = append(opts.Routes, u)
		}
	}
	srv, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("embedded NATS: %w", err)
	}
	if o.Logger != nil {
		srv.SetLoggerV2(natsLogger{o.Logger}, false, false, false)
	}
	srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		srv.Shutdown()
		return nil, errors.New("embedded NATS did not get ready within 10 s")
	}
	return &Embedded{srv: srv, password: password}, nil
}

// Connect opens an in-process connection to the node.
func (e *Embedded) Connect(name string) (*nats.Conn, error) {
	return nats.Connect("", nats.InProcessServer(e.srv), nats.UserInfo(natsUser, e.password), nats.Name(name), nats.MaxReconnects(-1))
}

// RouteAddr is where the node's routes listen ("" without routes).
func (e *Embedded) RouteAddr() string {
	if a := e.srv.ClusterAddr(); a != nil {
		return a.String()
	}
	return ""
}

// Routes is how many other NATS nodes this one is connected to.
func (e *Embedded) Routes() int { return e.srv.NumRoutes() }

// ClientURL is the node's client URL ("" when it serves none).
func (e *Embedded) ClientURL() string {
	if e.srv.Addr() == nil {
		return ""
	}
	return e.srv.ClientURL()
}

// Shutdown stops the node and waits for it.
func (e *Embedded) Shutdown() {
	e.srv.Shutdown()
	e.srv.WaitForShutdown()
}

// Dial connects to external NATS servers (comma-separated URLs are
// given as a list), reconnecting for ever.
func Dial(urls []string, name string) (*nats.Conn, error) {
	nc, err := nats.Connect(joinURLs(urls), nats.Name(name), nats.MaxReconnects(-1), nats.RetryOnFailedConnect(false))
	if err != nil {
		return nil, fmt.Errorf("connect to NATS %v: %w", redacted(urls), err)
	}
	return nc, nil
}

// redacted is urls without their passwords, for messages.
func redacted(urls []string) []string {
	out := make([]string, len(urls))
	for i, s := range urls {
		if u, err := url.Parse(s); err == nil {
			s = u.Redacted()
		} else {
			s = "(not a URL)"
		}
		out[i] = s
	}
	return out
}

func joinURLs(urls []string) string {
	s := ""
	for i, u := range urls {
		if i > 0 {
			s += ","
		}
		s += u
	}
	return s
}

func splitHostPort(addr string) (string, int, error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, fmt.Errorf("%q is not host:port: %w", addr, err)
	}
	port, err := strconv.Atoi(p)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("%q has no valid port", addr)
	}
	if host == "" {
		host = "0.0.0.0"
	}
	if port == 0 {
		port = server.RANDOM_PORT // NATS reads 0 as "the default port"
	}
	return host, port, nil
}

// natsLogger sends the NATS server's log to slog (its notices at debug:
// they are many and routine).
type natsLogger struct{ l *slog.Logger }

func (n natsLogger) Noticef(format string, v ...any) { n.l.Debug(fmt.Sprintf(format, v...)) }
func (n natsLogger) Warnf(format string, v ...any)   { n.l.Warn(fmt.Sprintf(format, v...)) }
func (n natsLogger) Fatalf(format string, v ...any)  { n.l.Error(fmt.Sprintf(format, v...)) }
func (n natsLogger) Errorf(format string, v ...any)  { n.l.Error(fmt.Sprintf(format, v...)) }
func (n natsLogger) Debugf(format string, v ...any)  { n.l.Debug(fmt.Sprintf(format, v...)) }
func (n natsLogger) Tracef(format string, v ...any)  {}

func randomKey() []byte {
	b := make([]byte, 24)
	rand.Read(b) // never fails (crypto/rand)
	return b
}
