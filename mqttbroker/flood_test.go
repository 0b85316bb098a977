package mqttbroker

import (
	"bufio"
	"fmt"
	"net"
	"sync/atomic"
	"testing"
	"time"
)

// dialFrom opens a TCP connection to addr from the loopback address local
// (any of 127.0.0.0/8 works on Linux).
func dialFrom(t testing.TB, local, addr string) (net.Conn, error) {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}, Timeout: 10 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err == nil {
		t.Cleanup(func() { c.Close() })
	}
	return c, err
}

// loginFrom logs a device in over a connection from local; it reports
// whether the broker accepted the login.
func loginFrom(t testing.TB, b *Broker, local, deviceID string) bool {
	t.Helper()
	c, err := dialFrom(t, local, b.Addr())
	if err != nil {
		t.Fatal(err)
	}
	rc := &rawClient{t: t, conn: c, r: bufio.NewReader(c), v: 4}
	rc.send(rc.connectPacket(rawLogin(b, deviceID)))
	ack, err := rc.read()
	return err == nil && ack.ReasonCode == 0
}

// A flood of sockets that never send CONNECT, from one address, is held
// to that address's share of connections not logged in (the excess is
// closed at once), and devices elsewhere log in all the while. Sockets
// from many addresses are held to the total.
func TestPreLoginFloodDoesNotLockOutDevices(t *testing.T) {
	const perAddr, total, flood = 8, 20, 300
	b, h := startBroker(t, func(c *Config) {
		c.MaxConnections = 100 // below the flood: without the pending limits it fills every place
		c.MaxPending, c.MaxPendingPerAddress = total, perAddr
	})
	for range flood {
		if _, err := dialFrom(t, "127.0.0.1", b.Addr()); err != nil {
			t.Fatal(err)
		}
	}
	// The listener accepts in order, so the flood has been dealt with
	// when a later connection logs in.
	if !loginFrom(t, b, "127.0.0.2", "aa:bb:cc:dd:ee:01") {
		t.Fatalf("a device's login from another address was refused during the flood; stats %+v", b.Stats())
	}
	expectEvent(t, h, "connect aa:bb:cc:dd:ee:01")
	if st := b.Stats(); st.Pending != perAddr || st.OverPending != flood-perAddr {
		t.Fatalf("stats %+v, want %d pending and %d closed at once", st, perAddr, flood-perAddr)
	}

	// From many addresses: at most total wait for CONNECT.
	for i := range 5 {
		for range perAddr {
			if _, err := dialFrom(t, net.IPv4(127, 0, 1, byte(i+1)).String(), b.Addr()); err != nil {
				t.Fatal(err)
			}
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for b.Stats().OverPending != flood-perAddr+(perAddr+5*perAddr-total) {
		if time.Now().After(deadline) {
			t.Fatalf("stats %+v, want %d pending", b.Stats(), total)
		}
		time.Sleep(time.Millisecond)
	}
	if st := b.Stats(); st.Pending != total {
		t.Fatalf("stats %+v, want %d pending", st, total)
	}
}

// Failed logins from one address are limited (20 a minute by default):
// beyond, that address's CONNECTs are refused unchecked, even with a good
// login, while devices elsewhere log in as usual.
func TestLoginFailuresThrottledPerAddress(t *testing.T) {
	var checked atomic.Int64
	b, h := startBroker(t, func(c *Config) {
		c.Authenticate = func(clientID, username, password, remote string) (string, error) {
			checked.Add(1)
			return testAuth(clientID, username, password, remote)
		}
	})
	const guesses = 100
	for i := range guesses {
		c, err := dialFrom(t, "127.0.0.3", b.Addr())
		if err != nil {
			t.Fatal(err)
		}
		rc := &rawClient{t: t, conn: c, r: bufio.NewReader(c), v: 4}
		l := rawLogin(b, "aa:bb:cc:dd:ee:01")
		l.Password = fmt.Sprintf("guess %d", i)
		rc.send(rc.connectPacket(l))
		if ack := rc.mustRead("CONNACK"); ack.ReasonCode == 0 {
			t.Fatalf("guess %d accepted", i)
		}
		c.Close()
	}
	if n := checked.Load(); n != 20 {
		t.Fatalf("%d of %d guesses checked, want 20", n, guesses)
	}
	if loginFrom(t, b, "127.0.0.3", "aa:bb:cc:dd:ee:01") {
		t.Fatal("a login from the guessing address was checked")
	}
	if !loginFrom(t, b, "127.0.0.4", "aa:bb:cc:dd:ee:01") {
		t.Fatal("a device's login from another address was refused")
	}
	expectEvent(t, h, "connect aa:bb:cc:dd:ee:01")
	if st := b.Stats(); st.Throttled != guesses-20+1 {
		t.Fatalf("stats %+v", st)
	}
}
