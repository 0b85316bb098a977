package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/coder/websocket"
	"github.com/xiaozhi-hub/hub/protocol"
)

// The baseline's messages have the sizes of the call path's device leg:
// the hub's tools/call envelope and the device's result envelope.
const baselineSessionID = "0123456789abcdef0123456789abcdef"

func baselineRequest() []byte {
	payload, _ := protocol.EncodeRequest(123456, "tools/call", struct {
		Name      string         `json:"name"`
		Arguments map[string]int `json:"arguments"`
	}{callTool, map[string]int{"volume": 30}})
	return protocol.EncodeEnvelope(baselineSessionID, payload)
}

// baselineReply is what the simulated device sends for set_volume (the
// firmware builds it by concatenation, as package sim does).
func baselineReply() []byte {
	return []byte(`{"session_id":"` + baselineSessionID + `","type":"mcp","payload":{"jsonrpc":"2.0","id":123456,"result":{"content":[{"type":"text","text":"true"}],"isError":false}}}`)
}

// echoMain is the hidden "echo" role: a bare WebSocket server (the same
// library as the hub) that answers every message with the device's reply.
func echoMain(args []string) error {
	fs := flag.NewFlagSet("xiaozhi-bench echo", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:0", "address")
	if err := fs.Parse(args); err != nil {
		return err
	}
	reply := baselineReply()
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		for {
			_, _, err := c.Read(ctx)
			if err != nil {
				return
			}
			if err := c.Write(ctx, websocket.MessageText, reply); err != nil {
				return
			}
		}
	})}
	go func() { _ = srv.Serve(ln) }()
	fmt.Printf("echo %s\n", ln.Addr())
	<-ctx.Done()
	return srv.Close()
}

// echoProc is the echo child as the parent sees it.
type echoProc struct {
	cmd  *exec.Cmd
	addr string
	done chan struct{}
}

func startEcho(ctx context.Context) (*echoProc, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, "echo")
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	e := &echoProc{cmd: cmd, done: make(chan struct{})}
	first := make(chan string, 1)
	go func() {
		var line strings.Builder
		b := make([]byte, 1)
		for {
			if _, err := out.Read(b); err != nil || b[0] == '\n' {
				break
			}
			line.WriteByte(b[0])
		}
		first <- line.String()
	}()
	go func() { _ = cmd.Wait(); close(e.done) }()
	select {
	case l := <-first:
		a, ok := strings.CutPrefix(l, "echo ")
		if !ok {
			e.stop()
			return nil, fmt.Errorf("echo child said %q", l)
		}
		e.addr = a
	case <-time.After(30 * time.Second):
		e.stop()
		return nil, errors.New("echo child did not start")
	case <-ctx.Done():
		e.stop()
		return nil, ctx.Err()
	}
	return e, nil
}

func (e *echoProc) cpu() time.Duration { d, _ := procCPU(e.cmd.Process.Pid); return d }

func (e *echoProc) stop() {
	_ = e.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-e.done:
	case <-time.After(5 * time.Second):
		_ = e.cmd.Process.Kill()
		<-e.done
	}
}

// echoConn is one baseline connection. Requests may be pipelined: the echo
// server answers in order, so replies are matched to send times by a FIFO.
type echoConn struct {
	c       *websocket.Conn
	mu      sync.Mutex
	pending []time.Time // scheduled times of requests awaiting replies
}

func dialEcho(ctx context.Context, addr string, n int) ([]*echoConn, error) {
	conns := make([]*echoConn, n)
	for i := range conns {
		c, _, err := websocket.Dial(ctx, "ws://"+addr+"/", nil)
		if err != nil {
			for _, ec := range conns[:i] {
				ec.c.CloseNow()
			}
			return nil, err
		}
		conns[i] = &echoConn{c: c}
	}
	return conns, nil
}

// runBaseline measures bare round trips: closed loop (one request in
// flight per connection) and open loop at the offered rate.
func runBaseline(e *env) (*BaselineResult, error) {
	ctx := e.ctx
	echo, err := startEcho(ctx)
	if err != nil {
		return nil, err
	}
	defer echo.stop()
	conc := e.opts.concurrency
	conns, err := dialEcho(ctx, echo.addr, conc)
	if err != nil {
		return nil, fmt.Errorf("dial echo: %w", err)
	}
	defer func() {
		for _, c := range conns {
			c.c.CloseNow()
		}
	}()
	req := baselineRequest()
	res := &BaselineResult{Connections: conc, RequestBytes: len(req), ReplyBytes: len(baselineReply())}

	roundTrip := func(c *echoConn) error {
		if err := c.c.Write(ctx, websocket.MessageText, req); err != nil {
			return err
		}
		_, _, err := c.c.Read(ctx)
		return err
	}
	// Closed loop, after a warm-up.
	closed := func(d time.Duration) (*CallRun, []time.Duration, error) {
		var all samples
		var wg sync.WaitGroup
		var errMu sync.Mutex
		var firstErr error
		errs := 0
		echo0, self0 := echo.cpu(), selfCPU()
		start := time.Now()
		end := start.Add(d)
		for _, c := range conns {
			wg.Go(func() {
				local := make([]time.Duration, 0, 4096)
				for time.Now().Before(end) {
					t := time.Now()
					if err := roundTrip(c); err != nil {
						errMu.Lock()
						errs++
						if firstErr == nil {
							firstErr = err
						}
						errMu.Unlock()
						return
					}
					local = append(local, time.Since(t))
				}
				all.addAll(local)
			})
		}
		wg.Wait()
		elapsed := time.Since(start)
		if firstErr != nil {
			return nil, nil, fmt.Errorf("baseline round trip: %w", firstErr)
		}
		sorted := all.sorted()
		run := newCallRun("closed", conc, 0, elapsed, sorted, errs)
		run.cpu(echo.cpu()-echo0, selfCPU()-self0)
		return run, sorted, nil
	}
	e.progress("baseline: warm-up")
	if _, _, err := closed(e.opts.warmup); err != nil {
		return nil, err
	}
	e.progress("baseline: closed loop, %d connections, %v", conc, e.opts.duration)
	run, sorted, err := closed(e.opts.duration)
	if err != nil {
		return nil, err
	}
	res.Closed = run
	e.series = append(e.series, series{"bare WebSocket, closed loop", sorted})

	// Open loop: requests are scheduled at the offered rate and assigned to
	// connections in turn; latency counts from the scheduled time.
	e.progress("baseline: open loop at %.0f/s, %v", e.opts.rate, e.opts.duration)
	var all samples
	var wg sync.WaitGroup
	for _, c := range conns {
		c.pending = c.pending[:0]
		wg.Go(func() {
			local := make([]time.Duration, 0, 4096)
			defer func() { all.addAll(local) }()
			for {
				_, _, err := c.c.Read(ctx)
				if err != nil {
					return
				}
				c.mu.Lock()
				if len(c.pending) == 0 {
					c.mu.Unlock()
					continue
				}
				t := c.pending[0]
				c.pending = c.pending[1:]
				c.mu.Unlock()
				if t.IsZero() { // the end marker: every earlier reply is in
					return
				}
				local = append(local, time.Since(t))
			}
		})
	}
	echo0, self0 := echo.cpu(), selfCPU()
	start := time.Now()
	n := 0
	errs := 0
	schedule(ctx, start, e.opts.rate, e.opts.duration, func(at time.Time) {
		c := conns[n%len(conns)]
		n++
		c.mu.Lock()
		c.pending = append(c.pending, at)
		c.mu.Unlock()
		if err := c.c.Write(ctx, websocket.MessageText, req); err != nil {
			errs++
		}
	})
	// One zero-time marker per connection ends its reader after the last reply.
	for _, c := range conns {
		c.mu.Lock()
		c.pending = append(c.pending, time.Time{})
		c.mu.Unlock()
		_ = c.c.Write(ctx, websocket.MessageText, req)
	}
	wg.Wait()
	elapsed := time.Since(start)
	osorted := all.sorted()
	open := newCallRun("open", conc, e.opts.rate, elapsed, osorted, errs)
	open.cpu(echo.cpu()-echo0, selfCPU()-self0)
	res.Open = open
	e.series = append(e.series, series{fmt.Sprintf("bare WebSocket, open loop %.0f/s", e.opts.rate), osorted})
	return res, nil
}

// schedule calls send for every request due at rate per second from start
// for d, at (or as soon as possible after) its scheduled time, passing that
// time. It does not wait for requests to complete: latency measured from
// the scheduled time includes any queueing (no coordinated omission).
func schedule(ctx context.Context, start time.Time, rate float64, d time.Duration, send func(at time.Time)) {
	total := int(rate * d.Seconds())
	interval := time.Duration(float64(time.Second) / rate)
	for i := 0; i < total && ctx.Err() == nil; {
		now := time.Now()
		for ; i < total; i++ {
			at := start.Add(time.Duration(i) * interval)
			if at.After(now) {
				break
			}
			send(at)
		}
		if i < total {
			next := start.Add(time.Duration(i) * interval)
			if w := time.Until(next); w > 0 {
				time.Sleep(w)
			}
		}
	}
}
