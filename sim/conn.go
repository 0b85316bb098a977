package sim

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/coder/websocket"
	"github.com/xiaozhi-hub/hub/sim/mqttdevice"
)

// ErrHello is wrapped by Connect's error when the server hello was invalid
// or did not arrive in time; the message says exactly what was wrong.
var ErrHello = errors.New("sim: server hello not accepted")

// readLimit bounds one incoming message. Exceeding it makes the WebSocket
// library close the connection.
const readLimit = 1 << 20

// defaultHTTPClient dials like the firmware: no proxy, no gzip, HTTP/1.1.
var defaultHTTPClient = &http.Client{Transport: &http.Transport{
	DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
	TLSHandshakeTimeout: 10 * time.Second,
	DisableCompression:  true,
}}

// link is one connection of a device: a WebSocket, or an MQTT session
// (mqtt.go), which is open while the device is idle.
type link struct {
	conn   *websocket.Conn
	mq     *mqttdevice.Device // the MQTT session, instead of conn
	ctx    context.Context    // cancelled when the link ends; tool handlers get it
	cancel context.CancelFunc
	hello  chan struct{} // closed once the server hello is accepted
	done   chan struct{} // closed when the read loop has exited
	timer  *time.Timer   // hello timeout

	// Guarded by Device.mu.
	helloed bool
	err     error // why the link failed before the hello was accepted
	lists   int   // tools/list requests received (for Faults.FailLists)
}

// drop closes the TCP connection without a WebSocket Close frame: the
// firmware just destroys the socket (docs/protocol.md §3.5).
func (l *link) drop() {
	// The socket first: a tool handler that sees the cancellation must not
	// get an error reply out before the connection is gone (a dropped
	// device says nothing more).
	if l.mq != nil {
		l.mq.Drop()
	} else {
		_ = l.conn.CloseNow()
	}
	l.cancel()
}

// Connect dials the hub, sends the client hello and returns once the server
// hello has been accepted (§3.1–3.3). ctx bounds only the connection
// attempt; the connection then lives until Drop, Close, or the hub closes it.
// A missing or wrong "transport" in the server hello fails Connect with an
// error wrapping ErrHello (the real device would crash or time out).
func (d *Device) Connect(ctx context.Context) error {
	l, err := d.dial(ctx)
	if err != nil {
		return err
	}
	go d.readLoop(l)
	select {
	case <-l.hello:
		return nil
	case <-l.done:
		return d.linkErr(l)
	case <-ctx.Done():
		l.drop()
		<-l.done
		return ctx.Err()
	}
}

// Run connects and serves until ctx ends, reconnecting with a jittered,
// doubling back-off (ReconnectMin..ReconnectMax) whenever the connection
// fails or drops. The read loop runs on the caller's goroutine. Run returns
// nil when ctx ends, after the device has stopped.
func (d *Device) Run(ctx context.Context) error {
	backoff := d.cfg.ReconnectMin
	for {
		helloed, err := d.serve(ctx)
		if ctx.Err() != nil {
			d.loop.wait()
			return nil
		}
		if helloed {
			backoff = d.cfg.ReconnectMin
		}
		wait := backoff/2 + rand.N(backoff/2+1)
		d.log.Info("sim: connection ended, reconnecting", "err", err, "in", wait)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			d.loop.wait()
			return nil
		case <-t.C:
		}
		backoff = min(backoff*2, d.cfg.ReconnectMax)
	}
}

// serve runs one connection on the calling goroutine.
func (d *Device) serve(ctx context.Context) (helloed bool, err error) {
	l, err := d.dial(ctx)
	if err != nil {
		return false, err
	}
	stop := context.AfterFunc(ctx, l.drop)
	defer stop()
	d.readLoop(l)
	d.mu.Lock()
	defer d.mu.Unlock()
	if l.err != nil {
		return l.helloed, l.err
	}
	return l.helloed, errors.New("connection closed")
}

// Drop closes the TCP connection abruptly, without a Close frame, as the
// firmware does (§3.5). The hub sees an abnormal closure (1006).
func (d *Device) Drop() {
	d.mu.Lock()
	l := d.link
	d.mu.Unlock()
	if l != nil {
		l.drop()
	}
}

// Close is Drop followed by Wait: the firmware never sends a Close frame.
func (d *Device) Close() error {
	d.Drop()
	d.Wait()
	return nil
}

// Wait blocks until the current connection's read loop has exited and no
// scheduled work (tool calls, replies) remains.
func (d *Device) Wait() {
	d.mu.Lock()
	l := d.link
	d.mu.Unlock()
	if l != nil {
		<-l.done
	}
	d.loop.wait()
}

// Done returns a channel closed when the current connection has ended
// (already closed if the device never connected).
func (d *Device) Done() <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.link == nil {
		c := make(chan struct{})
		close(c)
		return c
	}
	return d.link.done
}

// Connected reports whether the device has a connection with an accepted hello.
func (d *Device) Connected() bool {
	d.mu.Lock()
	l := d.link
	d.mu.Unlock()
	if l == nil {
		return false
	}
	select {
	case <-l.done:
		return false
	case <-l.hello:
		return true
	default:
		return false
	}
}

// dial opens the WebSocket and sends the client hello, or connects MQTT.
func (d *Device) dial(ctx context.Context) (*link, error) {
	if _, err := d.current(); err == nil {
		return nil, errors.New("sim: already connected")
	}
	d.mu.Lock()
	mqtt := d.transport == "mqtt"
	d.mu.Unlock()
	if mqtt {
		return d.dialMQTT(ctx)
	}
	target, header, err := d.target()
	if err != nil {
		return nil, err
	}
	// The firmware waits 10 s for TCP + upgrade (§3.1).
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, resp, err := websocket.Dial(dctx, target, &websocket.DialOptions{
		HTTPClient: d.cfg.HTTPClient,
		HTTPHeader: header,
	})
	if err != nil {
		if resp != nil {
			return nil, fmt.Errorf("sim: connect %s: HTTP %s: %w", d.cfg.URL, resp.Status, err)
		}
		return nil, fmt.Errorf("sim: connect %s: %w", d.cfg.URL, err)
	}
	conn.SetReadLimit(readLimit)
	lctx, lcancel := context.WithCancel(context.Background())
	l := &link{conn: conn, ctx: lctx, cancel: lcancel, hello: make(chan struct{}), done: make(chan struct{})}
	d.mu.Lock()
	d.link = l
	d.state = StateIdle
	d.mu.Unlock()
	if err := d.sendText(l, d.helloMessage()); err != nil {
		l.drop()
		close(l.done)
		return nil, fmt.Errorf("sim: send hello: %w", err)
	}
	l.timer = time.AfterFunc(d.cfg.HelloTimeout, func() {
		d.failLink(l, fmt.Errorf("%w: no server hello within %v (the firmware gives up and closes the channel, §3.3)", ErrHello, d.cfg.HelloTimeout))
	})
	return l, nil
}

// target builds the URL and upgrade headers (§3.1).
func (d *Device) target() (string, http.Header, error) {
	u, err := url.Parse(d.cfg.URL)
	if err != nil {
		return "", nil, fmt.Errorf("sim: bad URL %q: %w", d.cfg.URL, err)
	}
	auth := d.cfg.Token
	if auth != "" && !strings.Contains(auth, " ") {
		auth = "Bearer " + auth // prepended only if the token has no space
	}
	version := strconv.Itoa(d.cfg.ProtocolVersion)
	h := http.Header{}
	h["User-Agent"] = []string{""} // empty: Go sends none, like the firmware
	if d.cfg.IdentityInQuery {
		q := u.Query()
		q.Set("device-id", d.cfg.DeviceID)
		q.Set("client-id", d.cfg.ClientID)
		q.Set("protocol-version", version)
		if auth != "" {
			q.Set("authorization", auth)
		}
		u.RawQuery = q.Encode()
	} else {
		if auth != "" {
			h.Set("Authorization", auth)
		}
		h.Set("Client-Id", d.cfg.ClientID)
		h.Set("Device-Id", d.cfg.DeviceID)
		h.Set("Protocol-Version", version)
	}
	return u.String(), h, nil
}

// helloMessage is the client hello (§3.2). Firmware 2.x sends features.mcp;
// 1.6.6–1.7.x built for IoT send an empty features object.
func (d *Device) helloMessage() []byte {
	features := `{"mcp":true}`
	if d.cfg.Mode == ModeIoT {
		features = `{}`
	}
	return []byte(`{"type":"hello","version":` + strconv.Itoa(d.cfg.ProtocolVersion) +
		`,"features":` + features +
		`,"transport":"websocket","audio_params":{"format":"opus","sample_rate":16000,"channels":1,"frame_duration":60}}`)
}

// failLink records why a link failed before its hello and drops it.
func (d *Device) failLink(l *link, err error) {
	d.mu.Lock()
	if l.helloed || l.err != nil {
		d.mu.Unlock()
		return
	}
	l.err = err
	d.mu.Unlock()
	d.log.Warn("sim: hello failed", "err", err)
	l.drop()
}

// linkErr is Connect's result once the read loop of l has exited.
func (d *Device) linkErr(l *link) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	switch {
	case l.err != nil:
		return l.err
	case l.helloed:
		return nil
	default:
		return errors.New("sim: connection closed before the server hello")
	}
}

func (d *Device) readLoop(l *link) {
	defer close(l.done)
	defer l.drop()
	if l.mq != nil {
		d.readMQTT(l)
		return
	}
	for {
		typ, data, err := l.conn.Read(context.Background())
		if err != nil {
			l.timer.Stop()
			d.mu.Lock()
			d.state = StateIdle // on close the device returns to idle (§3.5)
			if !l.helloed && l.err == nil {
				l.err = fmt.Errorf("sim: connection closed before the server hello: %w", err)
			}
			d.mu.Unlock()
			d.log.Debug("sim: connection ended", "err", err)
			return
		}
		if typ == websocket.MessageBinary {
			d.onAudio(data)
			continue
		}
		d.onText(l, data)
	}
}

// sendText writes one text frame on l; after l ended it fails silently,
// like the firmware, whose replies are lost once the socket is gone (§3.5).
func (d *Device) sendText(l *link, b []byte) error {
	if l.mq != nil {
		return l.mq.Publish(b)
	}
	err := l.conn.Write(l.ctx, websocket.MessageText, b)
	if err != nil {
		d.log.Debug("sim: send failed", "err", err)
	}
	return err
}

// current returns the current link if it is still open.
func (d *Device) current() (*link, error) {
	d.mu.Lock()
	l := d.link
	d.mu.Unlock()
	if l == nil {
		return nil, errors.New("sim: not connected")
	}
	select {
	case <-l.done:
		return nil, errors.New("sim: not connected")
	default:
		return l, nil
	}
}
