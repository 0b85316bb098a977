// Command xiaozhi-bench measures the hub on this machine and compares it
// with a bare WebSocket round trip between two processes: the practical
// limit of the machine. It starts everything it needs on loopback: the hub
// runs as a separate child process (this binary re-executed in the hidden
// "hub" role) so that its CPU and memory are measured apart from the load
// generator and the simulated devices, which run in this process.
//
//	xiaozhi-bench                                   # every scenario, full size
//	xiaozhi-bench --scenarios calls,baseline --json out.json --svg latency.svg
//	xiaozhi-bench --ready-devices 1000 --idle-steps 500,1000 --restart-devices 1000 --duration 2s
//
// Scenarios: baseline (bare WebSocket request/response), readiness (N devices
// connect at once until all tools are cached), idle (footprint per idle
// device), calls (tool calls through the REST API and, when the hub has it,
// the MCP endpoint; closed loop and open loop) and restart (kill -9 with
// devices connected) and talk (push-to-talk devices speaking to a hub
// whose speech and model providers are stand-ins in this process). See
// BENCHMARKS.md.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/xiaozhi-hub/hub/asr"
	"github.com/xiaozhi-hub/hub/sim"
)

// callTool is the tool the call path runs: it has an integer argument with
// a range, so the hub validates arguments on every call.
const callTool = "self.audio_speaker.set_volume"

var allScenarios = []string{"baseline", "readiness", "idle", "calls", "restart", "talk"}

func main() {
	var err error
	switch {
	case len(os.Args) > 1 && os.Args[1] == "hub":
		err = hubMain(os.Args[2:])
	case len(os.Args) > 1 && os.Args[1] == "echo":
		err = echoMain(os.Args[2:])
	default:
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		err = run(ctx, os.Args[1:], os.Stdout, os.Stderr)
		stop()
	}
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "xiaozhi-bench:", err)
		}
		os.Exit(1)
	}
}

type options struct {
	scenarios      []string
	profile        string
	readyDevices   int
	idleSteps      []int
	callDevices    int
	concurrency    int
	rate           float64
	duration       time.Duration
	warmup         time.Duration
	restartDevices int
	sources        int
	dialCap        int
	hubLogLevel    string
	hubMemLimit    string
	jsonPath       string
	svgPath        string
	profileDir     string
	workDir        string
	keep           bool
	mcp            string
	closedOnly     bool
	moreRates      []float64
	transport      string
	listen         bool
	talkDevices    []int
	talkTurns      int
	talkSync       bool
	talkSchedule   time.Duration
	talkASRAudio   string
}

// env is what scenarios share.
type env struct {
	ctx    context.Context
	opts   options
	work   string
	prof   profiler
	token  string
	series []series
	stderr io.Writer
	start  time.Time
	notes  []string
}

func (e *env) progress(format string, args ...any) {
	fmt.Fprintf(e.stderr, "[%6.1fs] %s\n", time.Since(e.start).Seconds(), fmt.Sprintf(format, args...))
}

func (e *env) note(format string, args ...any) {
	e.notes = append(e.notes, fmt.Sprintf(format, args...))
	e.progress("note: "+format, args...)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("xiaozhi-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	scen := fs.String("scenarios", strings.Join(allScenarios, ","), "scenarios to run: "+strings.Join(allScenarios, ","))
	fs.StringVar(&o.profile, "profile", sim.ProfileFirmware, "device tool set: small, firmware or many-pages")
	fs.IntVar(&o.readyDevices, "ready-devices", 10000, "readiness: devices connecting at once")
	steps := fs.String("idle-steps", "1000,5000,10000,15000", "idle: device counts to measure at")
	fs.IntVar(&o.callDevices, "call-devices", 1000, "calls: devices the calls are spread over")
	fs.IntVar(&o.concurrency, "concurrency", 256, "calls and baseline: calls in flight (closed loop)")
	fs.Float64Var(&o.rate, "rate", 10000, "calls and baseline: offered calls per second (open loop)")
	moreRates := fs.String("more-rates", "5000", "calls: further offered rates for REST open-loop runs (comma-separated; empty for none)")
	fs.DurationVar(&o.duration, "duration", 5*time.Second, "length of each measured call phase")
	fs.DurationVar(&o.warmup, "warmup", time.Second, "warm-up before the measured call phases")
	fs.IntVar(&o.restartDevices, "restart-devices", 10000, "restart: devices connected when the hub is killed")
	fs.IntVar(&o.sources, "sources", 4, "loopback source addresses for the devices (127.0.0.2, …)")
	fs.IntVar(&o.dialCap, "dial-cap", 0, "connection attempts in flight at most (0: no cap)")
	fs.StringVar(&o.hubLogLevel, "hub-log-level", "warn", "the hub's log level (its log goes to <work-dir>/<scenario>/hub.log)")
	fs.StringVar(&o.hubMemLimit, "hub-memory-limit", "auto", "the hub's memory-limit setting (auto, off or a size)")
	fs.StringVar(&o.jsonPath, "json", "", "write the results as JSON to this file")
	fs.StringVar(&o.svgPath, "svg", "", "draw the call-latency distributions as SVG to this file")
	fs.StringVar(&o.profileDir, "profile-dir", "", "write CPU profiles of the hub per phase (and of the generator) here")
	fs.StringVar(&o.workDir, "work-dir", "", "directory for the hubs' data (default: a temporary one)")
	fs.BoolVar(&o.keep, "keep", false, "keep the work directory")
	fs.BoolVar(&o.closedOnly, "closed-only", false, "calls: skip the open-loop phases (for quick A/B comparisons)")
	fs.StringVar(&o.mcp, "mcp", "auto", "benchmark the MCP endpoint's call_device_tool: auto (if the hub serves /mcp) or off")
	fs.BoolVar(&o.listen, "listen", false, `every device sends "listen start" (auto mode) right after its hello, as firmware on WebSocket does, then stays silent`)
	fs.StringVar(&o.transport, "transport", "websocket", "how the simulated devices connect: websocket, or mqtt (the hub's embedded broker, MQTT+UDP firmware)")
	talkDevices := fs.String("talk-devices", "50,100", "talk: push-to-talk devices, one fresh hub per count")
	fs.IntVar(&o.talkTurns, "talk-turns", 6, "talk: turns per device, the first a warm-up left out of the figures")
	fs.BoolVar(&o.talkSync, "talk-sync", false, "talk: every device's turns end at the same instant (else spread evenly over --talk-schedule)")
	fs.DurationVar(&o.talkSchedule, "talk-schedule", 3*time.Second, "talk: each device starts a turn (1.2 s of speech, then the answer) this often")
	fs.StringVar(&o.talkASRAudio, "talk-asr-audio", "", "talk: the hub's asr-audio setting, what its recognizer uploads: wav or ogg-opus (the device's Opus, not decoded); empty: the hub's default (wav)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	for _, s := range strings.Split(*scen, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		if !slices.Contains(allScenarios, s) {
			return fmt.Errorf("unknown scenario %q (want %s)", s, strings.Join(allScenarios, ", "))
		}
		o.scenarios = append(o.scenarios, s)
	}
	var err error
	if o.idleSteps, err = counts("idle-steps", *steps); err != nil {
		return err
	}
	slices.Sort(o.idleSteps)
	if o.talkDevices, err = counts("talk-devices", *talkDevices); err != nil {
		return err
	}
	if o.talkASRAudio != "" && !slices.Contains(asr.Audios(), o.talkASRAudio) {
		return fmt.Errorf("--talk-asr-audio: %q is not one of %s", o.talkASRAudio, strings.Join(asr.Audios(), ", "))
	}
	if o.talkTurns < 2 || o.talkSchedule < 2500*time.Millisecond {
		return errors.New("--talk-turns must be at least 2 (one warm-up) and --talk-schedule at least 2.5s (a turn's length)")
	}
	for _, s := range strings.Split(*moreRates, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		r, err := strconv.ParseFloat(s, 64)
		if err != nil || r <= 0 {
			return fmt.Errorf("--more-rates: %q is not a positive rate", s)
		}
		o.moreRates = append(o.moreRates, r)
	}
	if err := sim.ApplyProfile(&sim.Config{}, o.profile); err != nil {
		return err
	}
	if o.transport != "websocket" && o.transport != "mqtt" {
		return fmt.Errorf("--transport must be websocket or mqtt, not %q", o.transport)
	}
	if o.concurrency < 1 || o.rate <= 0 || o.duration <= 0 || o.callDevices < 1 {
		return errors.New("--concurrency, --rate, --duration and --call-devices must be positive")
	}

	e := &env{ctx: ctx, opts: o, stderr: stderr, start: time.Now(), token: randomToken()}
	work := o.workDir
	if work == "" {
		if work, err = os.MkdirTemp("", "xiaozhi-bench-"); err != nil {
			return err
		}
		if !o.keep {
			defer os.RemoveAll(work)
		}
	} else if err := os.MkdirAll(work, 0o700); err != nil {
		return err
	}
	e.work = work
	if o.profileDir != "" {
		if err := os.MkdirAll(o.profileDir, 0o755); err != nil {
			return err
		}
		e.prof = profiler{dir: o.profileDir}
		f, err := os.Create(filepath.Join(o.profileDir, "generator.cpu.pprof"))
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer func() { pprof.StopCPUProfile(); f.Close() }()
	}

	rep := &Report{
		Started: time.Now().UTC(), Command: "xiaozhi-bench " + strings.Join(args, " "),
		Machine: describeMachine(),
		Settings: Settings{
			Scenarios: o.scenarios, Profile: o.profile, ReadyDevices: o.readyDevices, IdleSteps: o.idleSteps,
			CallDevices: o.callDevices, Concurrency: o.concurrency, Rate: o.rate, Duration: o.duration.Seconds(),
			Warmup: o.warmup.Seconds(), RestartDevices: o.restartDevices, Sources: o.sources, HubLogLevel: o.hubLogLevel, Transport: o.transport,
		},
	}
	e.progress("machine: %s, %d cores, %s, load average %.2f; work dir %s",
		rep.Machine.CPUModel, rep.Machine.NumCPU, rep.Machine.GoVersion, rep.Machine.LoadAvgBefore, work)
	has := func(s string) bool { return slices.Contains(o.scenarios, s) }
	// The baseline runs first, while this process is still small.
	steps2 := []struct {
		name string
		run  func() error
	}{
		{"baseline", func() (err error) { rep.Baseline, err = runBaseline(e); return }},
		{"readiness", func() (err error) { rep.Readiness, err = runReadiness(e); return }},
		{"idle", func() (err error) { rep.Idle, err = runIdle(e); return }},
		{"calls", func() (err error) { rep.Calls, err = runCalls(e); return }},
		{"restart", func() (err error) { rep.Restart, err = runRestart(e); return }},
		{"talk", func() (err error) { rep.Talk, err = runTalk(e); return }},
	}
	var errs []error
	for _, s := range steps2 {
		if !has(s.name) || ctx.Err() != nil {
			continue
		}
		e.progress("== %s", s.name)
		if err := s.run(); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", s.name, err))
			e.progress("%s failed: %v", s.name, err)
		}
	}
	rep.Machine.LoadAvgAfter = loadAvg()
	rep.Seconds = time.Since(e.start).Seconds()
	rep.Notes = e.notes
	rep.computeRatios()
	rep.computeTargets()
	rep.printTable(stdout)
	if o.jsonPath != "" {
		if err := rep.writeJSON(o.jsonPath); err != nil {
			errs = append(errs, err)
		}
	}
	if o.svgPath != "" && len(e.series) > 0 {
		f, err := os.Create(o.svgPath)
		if err == nil {
			title := fmt.Sprintf("xiaozhi-hub call latency — %d cores, %s", rep.Machine.NumCPU, rep.Machine.CPUModel)
			err = errors.Join(writeSVG(f, title, e.series), f.Close())
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	if ctx.Err() != nil {
		errs = append(errs, ctx.Err())
	}
	return errors.Join(errs...)
}

// counts parses the comma-separated positive counts of flag name.
func counts(name, list string) ([]int, error) {
	var out []int
	for _, s := range strings.Split(list, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("--%s: %q is not a positive count", name, s)
		}
		out = append(out, n)
	}
	return out, nil
}

func randomToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// hub starts a hub child with a fresh data directory for a scenario;
// edit, if given, changes its options.
func (e *env) hub(name string, edit ...func(*hubOptions)) (*hubProc, error) {
	dir := filepath.Join(e.work, name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	o := hubOptions{
		dataDir: dir, token: e.token, logLevel: e.opts.hubLogLevel, memLimit: e.opts.hubMemLimit,
		logFile: filepath.Join(dir, "hub.log"), pprof: true, mqtt: e.opts.transport == "mqtt",
	}
	for _, f := range edit {
		f(&o)
	}
	return startHub(e.ctx, o)
}

// load prepares simulated devices for h.
func (e *env) load(h *hubProc, prefix string, tweak func(*sim.LoadConfig)) (*sim.Load, error) {
	cfg := sim.LoadConfig{
		URL: h.deviceURL(), IDPrefix: prefix, Profile: e.opts.profile, Sources: e.opts.sources,
		MaxDialing: e.opts.dialCap, ReconnectMin: 250 * time.Millisecond, ReconnectMax: 2 * time.Second,
		ListenOnConnect: e.opts.listen,
	}
	if h.mqtt != "" {
		cfg.MQTT, cfg.Token = h.mqtt, h.token
	}
	if tweak != nil {
		tweak(&cfg)
	}
	return sim.NewLoad(cfg)
}

// waitFor polls cond every interval until it holds, ctx ends or timeout
// passes, and returns when it first held.
func waitFor(ctx context.Context, timeout, interval time.Duration, what string, cond func() (bool, error)) (time.Time, error) {
	deadline := time.Now().Add(timeout)
	for {
		ok, err := cond()
		now := time.Now()
		if ok {
			return now, nil
		}
		if now.After(deadline) {
			if err != nil {
				return now, fmt.Errorf("%s: not within %v: %w", what, timeout, err)
			}
			return now, fmt.Errorf("%s: not within %v", what, timeout)
		}
		select {
		case <-ctx.Done():
			return now, ctx.Err()
		case <-time.After(interval):
		}
	}
}

// waitReady waits until the hub has n devices connected and has cached the
// tools of n devices since it started.
func (e *env) waitReady(h *hubProc, n int, timeout time.Duration) error {
	var conn, disc int64
	_, err := waitFor(e.ctx, timeout, 25*time.Millisecond, fmt.Sprintf("%d devices ready", n), func() (bool, error) {
		var err error
		conn, disc, err = h.state(e.ctx)
		return err == nil && conn >= int64(n) && disc >= int64(n), err
	})
	if err != nil {
		err = fmt.Errorf("%w (connected %d, discovered %d)", err, conn, disc)
	}
	return err
}
