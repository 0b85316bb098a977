package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	rpprof "runtime/pprof"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/xiaozhi-hub/hub/internal/memlimit"
	"github.com/xiaozhi-hub/hub/server"
)

// hubMain is the hidden "hub" role: the whole hub (server.Open + Run) in a
// process of its own, so that its CPU and memory are measured apart from
// the load generator. With --pprof it also serves /debug/pprof and the
// bench controls (/bench/gc, /bench/cpu/start, /bench/cpu/stop) on a
// second, loopback-only listener; the hub itself is unchanged.
func hubMain(args []string) error {
	fs := flag.NewFlagSet("xiaozhi-bench hub", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:0", "hub address")
	dataDir := fs.String("data-dir", "", "hub data directory")
	token := fs.String("api-token", "", "admin API token")
	logLevel := fs.String("log-level", "warn", "hub log level")
	logFile := fs.String("log-file", "", "write the hub's log here (default stderr)")
	memLimit := fs.String("memory-limit", "auto", "the hub's memory-limit setting")
	pprofAddr := fs.String("pprof", "", "serve pprof and bench controls on this address")
	startupProfile := fs.String("startup-profile", "", "write a CPU profile of the start (until listening) to this file")
	mqttListen := fs.String("mqtt-listen", "", "the hub's mqtt-listen setting (devices on MQTT+UDP)")
	deviceToken := fs.String("device-token", "", "a device token (device-auth token): what MQTT devices log in with")
	mqttMaxPending := fs.Int("mqtt-max-pending", 0, "the hub's mqtt-max-pending setting (0: its default)")
	mqttPendingPerAddr := fs.Int("mqtt-pending-per-address", 0, "the hub's mqtt-pending-per-address setting (0: its default)")
	providers := fs.String("providers", "", "base URL (…/v1) of OpenAI-compatible providers for recognition, the agent's model and synthesis (the talk scenario's stand-ins)")
	asrAudio := fs.String("asr-audio", "", "the hub's asr-audio setting (with --providers)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *startupProfile != "" {
		f, err := os.Create(*startupProfile)
		if err != nil {
			return err
		}
		if err := rpprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer f.Close()
		defer rpprof.StopCPUProfile() // no-op once stopped below
	}
	cfg := server.DefaultConfig()
	cfg.Listen, cfg.DataDir, cfg.APIToken, cfg.LogLevel = *listen, *dataDir, *token, *logLevel
	cfg.DeviceAuth = "open" // explicitly: the default may change
	if *mqttListen != "" {
		cfg.MQTTListen, cfg.DeviceAuth, cfg.DeviceTokens = *mqttListen, "token", []string{*deviceToken}
		if *mqttMaxPending > 0 {
			cfg.MQTTMaxPending = *mqttMaxPending
		}
		if *mqttPendingPerAddr > 0 {
			cfg.MQTTPendingPerAddress = *mqttPendingPerAddr
		}
	}
	if *providers != "" {
		cfg.AgentProvider, cfg.AgentBaseURL, cfg.AgentAPIKey, cfg.AgentModel = "openai", *providers, standInKey, "bench-model"
		cfg.ASRProvider, cfg.ASRBaseURL, cfg.ASRAPIKey, cfg.ASRAudio = "openai", *providers, standInKey, *asrAudio
		cfg.TTSProvider, cfg.TTSBaseURL, cfg.TTSAPIKey = "openai", *providers, standInKey
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return err
	}
	var logOut io.Writer = os.Stderr
	if *logFile != "" {
		f, err := os.OpenFile(*logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return err
		}
		defer f.Close()
		logOut = f
	}
	log := slog.New(slog.NewTextHandler(logOut, &slog.HandlerOptions{Level: level}))

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	h, err := server.Open(ctx, cfg, log)
	if err != nil {
		return err
	}
	if *pprofAddr != "" {
		ln, err := net.Listen("tcp", *pprofAddr)
		if err != nil {
			h.Close()
			return err
		}
		srv := &http.Server{Handler: benchMux(h)}
		go func() { _ = srv.Serve(ln) }()
		defer srv.Close()
		fmt.Printf("pprof %s\n", ln.Addr())
	}
	if *startupProfile != "" {
		rpprof.StopCPUProfile()
	}
	mctx, stopLimit := context.WithCancel(ctx)
	var limiting sync.WaitGroup
	limiting.Go(func() {
		if err := memlimit.Run(mctx, *memLimit, log); err != nil {
			log.Error("memory limit", "err", err)
		}
	})
	defer limiting.Wait()
	defer stopLimit()
	if a := h.MQTTAddr(); a != "" {
		fmt.Printf("mqtt %s\n", a)
	}
	fmt.Printf("hub %s\n", h.Addr())
	return h.Run(ctx)
}

// benchMux serves pprof and the bench controls.
func benchMux(h *server.Hub) *http.ServeMux {
	mux := http.NewServeMux()
	// /bench/state is what the bench polls while it waits: connected devices
	// and tool lists cached, read from the hub's own collectors without
	// rendering all of /metrics (which would cost the hub a millisecond of
	// CPU at every poll).
	mux.HandleFunc("GET /bench/state", func(w http.ResponseWriter, _ *http.Request) {
		var conn, disc dto.Metric
		_ = h.Metrics.DevicesConnected.Write(&conn)
		if o, err := h.Metrics.Discovery.GetMetricWithLabelValues("ok"); err == nil {
			_ = o.(prometheus.Metric).Write(&disc)
		}
		fmt.Fprintf(w, "connected %d\ndiscovered %d\n", int64(conn.GetGauge().GetValue()), disc.GetHistogram().GetSampleCount())
	})
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	mux.HandleFunc("POST /bench/gc", func(w http.ResponseWriter, _ *http.Request) {
		// Each GC halves the stacks of idle goroutines that use less than a
		// quarter of theirs; a few cycles reach what a settled hub has.
		for range 4 {
			runtime.GC()
		}
		debug.FreeOSMemory()
	})
	mux.HandleFunc("GET /bench/runtime", func(w http.ResponseWriter, _ *http.Request) {
		samples := []metrics.Sample{
			{Name: "/gc/stack/starting-size:bytes"},
			{Name: "/memory/classes/heap/stacks:bytes"},
			{Name: "/sched/goroutines:goroutines"},
		}
		metrics.Read(samples)
		for _, s := range samples {
			if s.Value.Kind() == metrics.KindUint64 {
				fmt.Fprintf(w, "%s %d\n", s.Name, s.Value.Uint64())
			}
		}
	})
	var mu sync.Mutex
	var cpuFile *os.File
	mux.HandleFunc("POST /bench/cpu/start", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if cpuFile != nil {
			http.Error(w, "already profiling", http.StatusConflict)
			return
		}
		f, err := os.Create(r.URL.Query().Get("file"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if err := rpprof.StartCPUProfile(f); err != nil {
			f.Close()
			http.Error(w, err.Error(), http.StatusConflict)
			return
		}
		cpuFile = f
	})
	mux.HandleFunc("POST /bench/cpu/stop", func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if cpuFile == nil {
			return
		}
		rpprof.StopCPUProfile()
		cpuFile.Close()
		cpuFile = nil
	})
	mux.HandleFunc("POST /bench/heap", func(w http.ResponseWriter, r *http.Request) {
		f, err := os.Create(r.URL.Query().Get("file"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		defer f.Close()
		name := r.URL.Query().Get("profile") // heap or allocs
		if name == "" {
			name = "heap"
		}
		runtime.GC()
		_ = rpprof.Lookup(name).WriteTo(f, 0)
	})
	return mux
}

// hubProc is a hub child process as the parent sees it.
type hubProc struct {
	cmd     *exec.Cmd
	addr    string // host:port of the hub
	pprof   string // host:port of the bench controls ("" without)
	mqtt    string // host:port of the hub's MQTT broker ("" without)
	token   string
	dataDir string
	base    string // http://addr
	client  *http.Client
	exited  chan struct{}
}

type hubOptions struct {
	listen   string // "" means 127.0.0.1:0
	dataDir  string
	token    string
	logLevel string
	logFile  string
	pprof    bool
	memLimit string // the hub's memory-limit setting; "" means its default
	mqtt     bool   // devices on MQTT: the hub gets mqtt-listen and the token as a device token
	// providers is the base URL of the speech and model providers ("" for none).
	providers string
	asrAudio  string // the hub's asr-audio setting ("": its default)
}

// startHub re-executes this binary in the hub role and waits until it
// listens.
func startHub(ctx context.Context, o hubOptions) (*hubProc, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	if o.listen == "" {
		o.listen = "127.0.0.1:0"
	}
	args := []string{"hub", "--listen", o.listen, "--data-dir", o.dataDir, "--api-token", o.token, "--log-level", o.logLevel}
	if o.logFile != "" {
		args = append(args, "--log-file", o.logFile)
	}
	if o.pprof {
		args = append(args, "--pprof", "127.0.0.1:0")
	}
	if o.memLimit != "" {
		args = append(args, "--memory-limit", o.memLimit)
	}
	if o.mqtt {
		// Every simulated device connects from 127.0.0.1, as through one
		// NAT, and all at once.
		args = append(args, "--mqtt-listen", "127.0.0.1:0", "--device-token", o.token,
			"--mqtt-pending-per-address", "100000", "--mqtt-max-pending", "100000")
	}
	if o.providers != "" {
		args = append(args, "--providers", o.providers)
	}
	if o.asrAudio != "" {
		args = append(args, "--asr-audio", o.asrAudio)
	}
	cmd := exec.Command(self, args...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	h := &hubProc{cmd: cmd, token: o.token, dataDir: o.dataDir, exited: make(chan struct{}),
		client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}, Timeout: 30 * time.Second}}
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-h.exited:
			}
		}
		_, _ = io.Copy(io.Discard, out)
	}()
	go func() {
		_ = cmd.Wait()
		close(h.exited)
	}()
	deadline := time.NewTimer(60 * time.Second)
	defer deadline.Stop()
	for h.addr == "" {
		select {
		case l := <-lines:
			if a, ok := strings.CutPrefix(l, "pprof "); ok {
				h.pprof = a
			}
			if a, ok := strings.CutPrefix(l, "mqtt "); ok {
				h.mqtt = a
			}
			if a, ok := strings.CutPrefix(l, "hub "); ok {
				h.addr = a
			}
		case <-h.exited:
			return nil, fmt.Errorf("hub child exited before listening: %v", cmd.ProcessState)
		case <-deadline.C:
			h.kill()
			return nil, errors.New("hub child did not start within 60 s")
		case <-ctx.Done():
			h.kill()
			return nil, ctx.Err()
		}
	}
	_, port, _ := net.SplitHostPort(h.addr)
	h.base = "http://127.0.0.1:" + port
	return h, nil
}

func (h *hubProc) pid() int { return h.cmd.Process.Pid }
func (h *hubProc) deviceURL() string {
	return "ws" + strings.TrimPrefix(h.base, "http") + "/xiaozhi/v1/"
}
func (h *hubProc) cpu() time.Duration { d, _ := procCPU(h.pid()); return d }
func (h *hubProc) rss() int64         { n, _ := procRSS(h.pid()); return n }
func (h *hubProc) listenAddr() string { return h.addr }

// kill sends SIGKILL (kill -9) and reaps the process.
func (h *hubProc) kill() {
	_ = h.cmd.Process.Signal(syscall.SIGKILL)
	<-h.exited
}

// stop asks the hub to shut down, killing it if it takes over 15 s.
func (h *hubProc) stop() {
	_ = h.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-h.exited:
	case <-time.After(15 * time.Second):
		h.kill()
	}
}

// metrics scrapes the hub's /metrics.
func (h *hubProc) metrics(ctx context.Context) (promSamples, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.base+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := h.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("/metrics: %s", resp.Status)
	}
	return parseProm(resp.Body)
}

// apiGet fetches an /api path with the token and returns the status.
func (h *hubProc) apiGet(ctx context.Context, path string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.base+path, nil)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+h.token)
	resp, err := h.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// state returns how many devices the hub has connected and how many tool
// discoveries it has completed (see /bench/state).
func (h *hubProc) state(ctx context.Context) (connected, discovered int64, err error) {
	resp, err := h.benchGet(ctx, "/bench/state")
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	_, err = fmt.Fscanf(resp.Body, "connected %d\ndiscovered %d\n", &connected, &discovered)
	return connected, discovered, err
}

// benchGet fetches a path of the hub child's bench listener (with
// --pprof); the caller closes the body.
func (h *hubProc) benchGet(ctx context.Context, path string) (*http.Response, error) {
	if h.pprof == "" {
		return nil, errors.New("hub child runs without --pprof")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+h.pprof+path, nil)
	if err != nil {
		return nil, err
	}
	return h.client.Do(req)
}

// control posts to a bench control of the hub child (with --pprof).
func (h *hubProc) control(ctx context.Context, path string, q url.Values) error {
	if h.pprof == "" {
		return errors.New("hub child runs without --pprof")
	}
	u := "http://" + h.pprof + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, nil)
	if err != nil {
		return err
	}
	resp, err := h.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("%s: %s %s", path, resp.Status, strings.TrimSpace(string(b)))
	}
	return nil
}

// profiler writes CPU profiles of the hub per scenario phase when a
// directory is set, and does nothing otherwise.
type profiler struct{ dir string }

func (p profiler) start(ctx context.Context, h *hubProc, name string) {
	if p.dir == "" {
		return
	}
	file, _ := filepath.Abs(filepath.Join(p.dir, "hub-"+name+".cpu.pprof"))
	if err := h.control(ctx, "/bench/cpu/start", url.Values{"file": {file}}); err != nil {
		fmt.Fprintln(os.Stderr, "xiaozhi-bench: profile:", err)
	}
}

func (p profiler) stop(ctx context.Context, h *hubProc) {
	if p.dir == "" {
		return
	}
	if err := h.control(ctx, "/bench/cpu/stop", nil); err != nil {
		fmt.Fprintln(os.Stderr, "xiaozhi-bench: profile:", err)
	}
}

// liveHeap writes the hub's heap profile as of its last collection,
// without forcing one (so that RSS readings around it stay the OS's own).
func (p profiler) liveHeap(ctx context.Context, h *hubProc, name string) {
	if p.dir == "" {
		return
	}
	err := func() error {
		resp, err := h.benchGet(ctx, "/debug/pprof/heap")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		f, err := os.Create(filepath.Join(p.dir, "hub-"+name+".live-heap.pprof"))
		if err != nil {
			return err
		}
		_, err = io.Copy(f, resp.Body)
		return errors.Join(err, f.Close())
	}()
	if err != nil {
		fmt.Fprintln(os.Stderr, "xiaozhi-bench: profile:", err)
	}
}

// snapshot writes a heap or allocs profile of the hub.
func (p profiler) snapshot(ctx context.Context, h *hubProc, name, profile string) {
	if p.dir == "" {
		return
	}
	file, _ := filepath.Abs(filepath.Join(p.dir, "hub-"+name+"."+profile+".pprof"))
	if err := h.control(ctx, "/bench/heap", url.Values{"file": {file}, "profile": {profile}}); err != nil {
		fmt.Fprintln(os.Stderr, "xiaozhi-bench: profile:", err)
	}
}
