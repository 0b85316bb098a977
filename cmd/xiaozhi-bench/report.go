package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"text/tabwriter"
	"time"
)

// Report is everything one run measured; it is what --json writes.
type Report struct {
	Started  time.Time `json:"started"`
	Command  string    `json:"command"`
	Machine  Machine   `json:"machine"`
	Settings Settings  `json:"settings"`

	Baseline  *BaselineResult  `json:"baseline,omitempty"`
	Readiness *ReadinessResult `json:"readiness,omitempty"`
	Idle      *IdleResult      `json:"idle,omitempty"`
	Calls     *CallsResult     `json:"calls,omitempty"`
	Restart   *RestartResult   `json:"restart,omitempty"`
	Talk      *TalkResult      `json:"talk,omitempty"`
	Ratios    *Ratios          `json:"ratiosToBaseline,omitempty"`
	Targets   []Target         `json:"targets"`
	Notes     []string         `json:"notes,omitempty"`
	Seconds   float64          `json:"runSeconds"`
}

// Settings are the sizes the run used.
type Settings struct {
	Scenarios      []string `json:"scenarios"`
	Profile        string   `json:"profile"`
	ReadyDevices   int      `json:"readinessDevices"`
	IdleSteps      []int    `json:"idleSteps"`
	CallDevices    int      `json:"callDevices"`
	Concurrency    int      `json:"concurrency"`
	Rate           float64  `json:"offeredRate"`
	Duration       float64  `json:"phaseSeconds"`
	Warmup         float64  `json:"warmupSeconds"`
	RestartDevices int      `json:"restartDevices"`
	Sources        int      `json:"sourceAddresses"`
	HubLogLevel    string   `json:"hubLogLevel"`
	Transport      string   `json:"transport"` // websocket or mqtt
}

// CallRun is one load phase: closed loop at a concurrency or open loop at
// an offered rate. CPU is the server process's (hub or echo) and the bench
// process's own (load generator and simulated devices).
type CallRun struct {
	Mode        string  `json:"mode"`
	Concurrency int     `json:"concurrency,omitempty"`
	OfferedRate float64 `json:"offeredPerSec,omitempty"`
	Duration    float64 `json:"durationS"`
	Calls       int     `json:"calls"`
	Errors      int     `json:"errors"`
	PerSec      float64 `json:"perSec"`
	Latency     Latency `json:"latency"`

	ServerCPU        float64 `json:"serverCpuS"`
	ClientCPU        float64 `json:"clientCpuS"`
	ServerCPUPerCall float64 `json:"serverCpuPerCallUs"`
	ClientCPUPerCall float64 `json:"clientCpuPerCallUs"`
	// HubAllocs and HubAllocBytes are the hub's heap allocations per call
	// (go_memstats_mallocs_total, go_memstats_alloc_bytes_total): unlike
	// CPU time they do not depend on what else runs on the machine.
	HubAllocs     float64 `json:"hubAllocsPerCall,omitempty"`
	HubAllocBytes float64 `json:"hubAllocBytesPerCall,omitempty"`
	// HubP50/HubP99 come from the hub's own call-duration histogram
	// (accept → device answer), bucket-interpolated.
	HubP50 float64 `json:"hubP50Ms,omitempty"`
	HubP99 float64 `json:"hubP99Ms,omitempty"`
}

func newCallRun(mode string, conc int, rate float64, elapsed time.Duration, sorted []time.Duration, errs int) *CallRun {
	return &CallRun{
		Mode: mode, Concurrency: conc, OfferedRate: rate, Duration: elapsed.Seconds(),
		Calls: len(sorted), Errors: errs, PerSec: float64(len(sorted)) / elapsed.Seconds(),
		Latency: summarize(sorted),
	}
}

// cpu records the CPU time of the server and of this process over the run.
func (r *CallRun) cpu(server, client time.Duration) {
	r.ServerCPU, r.ClientCPU = server.Seconds(), client.Seconds()
	if r.Calls > 0 {
		r.ServerCPUPerCall = server.Seconds() / float64(r.Calls) * 1e6
		r.ClientCPUPerCall = client.Seconds() / float64(r.Calls) * 1e6
	}
}

// BaselineResult is the bare WebSocket round trip between two processes.
type BaselineResult struct {
	Connections  int      `json:"connections"`
	RequestBytes int      `json:"requestBytes"`
	ReplyBytes   int      `json:"replyBytes"`
	Closed       *CallRun `json:"closed"`
	Open         *CallRun `json:"open"`
}

// cpuPerRoundTrip is both ends' CPU per closed-loop round trip, in µs.
func (b *BaselineResult) cpuPerRoundTrip() float64 {
	return b.Closed.ServerCPUPerCall + b.Closed.ClientCPUPerCall
}

// ReadinessResult is the readiness storm.
type ReadinessResult struct {
	Devices   int    `json:"devices"`
	Profile   string `json:"profile"`
	ToolCount int    `json:"toolsPerDevice"`
	// Seconds from the first dial to all hellos answered, and to every
	// device's tools cached in the hub.
	AllConnected  float64 `json:"allConnectedS"`
	AllCached     float64 `json:"allCachedS"`
	DevicesPerSec float64 `json:"devicesPerSec"`
	// HelloToCached is the hub's own histogram (hello → tools cached),
	// bucket-interpolated; ConnectToHello is measured by each device.
	HelloToCachedP50 float64 `json:"helloToCachedP50Ms"`
	HelloToCachedP99 float64 `json:"helloToCachedP99Ms"`
	ConnectToHello   Latency `json:"connectToHello"`
	ConnectFailures  int64   `json:"connectFailures"`
	HubCPU           float64 `json:"hubCpuS"`
	HubCPUPerDevice  float64 `json:"hubCpuPerDeviceUs"`
	// GenCPUPerDevice is this process's CPU (the simulated devices and the
	// polling) per device over the same time.
	GenCPUPerDevice float64 `json:"generatorCpuPerDeviceUs"`
}

// IdleStep is the hub's footprint with Devices idle devices connected.
// The *Unforced figures are what an operator sees: read 3 s after the
// devices went idle, before the bench forces a collection; the others are
// read after forced GCs and debug.FreeOSMemory (what is held).
type IdleStep struct {
	Devices          int     `json:"devices"`
	RSSUnforced      int64   `json:"rssUnforcedBytes"`
	HeapUnforced     int64   `json:"heapInuseUnforcedBytes"`
	StackUnforced    int64   `json:"stackInuseUnforcedBytes"`
	RSSPerDeviceUnf  float64 `json:"rssPerDeviceUnforcedKB"`
	HeapPerDeviceUnf float64 `json:"heapPerDeviceUnforcedKB"`
	RSS              int64   `json:"rssBytes"`
	HeapInuse        int64   `json:"heapInuseBytes"`
	StackInuse       int64   `json:"stackInuseBytes"`
	Goroutines       int     `json:"goroutines"`
	RSSPerDevice     float64 `json:"rssPerDeviceKB"`
	HeapPerDevice    float64 `json:"heapPerDeviceKB"`
	StackPerDevice   float64 `json:"stackPerDeviceKB"`
	GoroutinesPerDev float64 `json:"goroutinesPerDevice"`
}

// IdleResult is the idle hold.
type IdleResult struct {
	Profile  string     `json:"profile"`
	Baseline IdleStep   `json:"baseline"`
	Steps    []IdleStep `json:"steps"`
}

// CallsResult is the call path through the REST API and, if the hub has
// one, the MCP endpoint.
type CallsResult struct {
	Devices  int      `json:"devices"`
	Tool     string   `json:"tool"`
	REST     *CallRun `json:"restClosed"`
	RESTOpen *CallRun `json:"restOpen"`
	// RESTOpenMore are open-loop runs at the other offered rates.
	RESTOpenMore []*CallRun `json:"restOpenMoreRates,omitempty"`
	MCP          *CallRun   `json:"mcpClosed,omitempty"`
	MCPOpen      *CallRun   `json:"mcpOpen,omitempty"`
	MCPNote      string     `json:"mcpNote,omitempty"`
}

// RestartResult is kill -9 and restart with devices reconnecting.
type RestartResult struct {
	Devices int `json:"devices"`
	// Seconds from SIGKILL to: the new process listening, the API
	// answering, the cached tools of every device served, a first tool
	// call answered, every device online, every device re-listed.
	Listening   float64 `json:"listeningS"`
	APIUp       float64 `json:"apiUpS"`
	ToolsServed float64 `json:"toolsServedS"`
	FirstCall   float64 `json:"firstCallS"`
	AllOnline   float64 `json:"allOnlineS"`
	AllRelisted float64 `json:"allRelistedS"`
	// CachedAtAPIUp is how many devices the API listed with cached tools
	// in its first answer.
	CachedAtAPIUp int `json:"cachedAtApiUp"`
}

// Ratios compare the hub's call path with the bare round trip.
type Ratios struct {
	Throughput float64 `json:"throughput"` // hub calls/s ÷ bare round trips/s (closed loop)
	P50        float64 `json:"p50"`        // hub p50 ÷ bare p50 (closed loop)
	P99        float64 `json:"p99"`        // hub p99 ÷ bare p99 (closed loop)
	OpenP99    float64 `json:"openP99"`    // same at the offered rate
	CPU        float64 `json:"cpu"`        // hub CPU per call ÷ bare CPU per round trip (both ends), closed loops
	// OpenCPU is the same ratio at the offered rate (open loops): with fewer
	// calls per wake-up, both sides cost more per call than when saturated.
	OpenCPU      float64 `json:"openCpu,omitempty"`
	HubOpenCPUUs float64 `json:"hubCpuPerCallOpenUs,omitempty"`
	BareOpenCPUs float64 `json:"bareCpuPerRoundTripOpenUs,omitempty"`
	MCPCPU       float64 `json:"mcpCpu,omitempty"`
	HubCPUUs     float64 `json:"hubCpuPerCallUs"`
	BareCPUUs    float64 `json:"bareCpuPerRoundTripUs"`
}

// Target is one of the targets and whether this run reached it.
type Target struct {
	Name    string `json:"name"`
	Goal    string `json:"goal"`
	Got     string `json:"got"`
	Reached bool   `json:"reached"`
}

func (r *Report) computeRatios() {
	if r.Baseline == nil || r.Calls == nil || r.Calls.REST == nil {
		return
	}
	b, c := r.Baseline, r.Calls
	x := &Ratios{
		Throughput: c.REST.PerSec / b.Closed.PerSec,
		P50:        c.REST.Latency.P50 / b.Closed.Latency.P50,
		P99:        c.REST.Latency.P99 / b.Closed.Latency.P99,
		HubCPUUs:   c.REST.ServerCPUPerCall,
		BareCPUUs:  b.cpuPerRoundTrip(),
	}
	x.CPU = x.HubCPUUs / x.BareCPUUs
	if c.RESTOpen != nil && b.Open != nil {
		x.OpenP99 = c.RESTOpen.Latency.P99 / b.Open.Latency.P99
		x.HubOpenCPUUs = c.RESTOpen.ServerCPUPerCall
		x.BareOpenCPUs = b.Open.ServerCPUPerCall + b.Open.ClientCPUPerCall
		if x.BareOpenCPUs > 0 {
			x.OpenCPU = x.HubOpenCPUUs / x.BareOpenCPUs
		}
	}
	if c.MCP != nil {
		x.MCPCPU = c.MCP.ServerCPUPerCall / x.BareCPUUs
	}
	r.Ratios = x
}

func (r *Report) computeTargets() {
	add := func(name, goal, got string, ok bool) {
		r.Targets = append(r.Targets, Target{name, goal, got, ok})
	}
	if x := r.Readiness; x != nil {
		add("readiness", fmt.Sprintf("%d devices connect → tools cached ≤ 3 s", 10000),
			fmt.Sprintf("%d devices in %.2f s", x.Devices, x.AllCached), x.Devices >= 10000 && x.AllCached <= 3)
	}
	if x := r.Idle; x != nil {
		var at10k *IdleStep
		top := 0
		for i := range x.Steps {
			if x.Steps[i].Devices == 10000 {
				at10k = &x.Steps[i]
			}
			top = max(top, x.Steps[i].Devices)
		}
		if at10k != nil {
			add("idle memory", "≤ 20 KB hub RSS per idle device at 10,000",
				fmt.Sprintf("%.1f KB RSS (%.1f KB Go heap)", at10k.RSSPerDevice, at10k.HeapPerDevice), at10k.RSSPerDevice <= 20)
		}
		add("idle hold", "15,000 devices held", fmt.Sprintf("%d held", top), top >= 15000)
	}
	if c := r.Calls; c != nil && c.REST != nil {
		add("call throughput", "≥ 10,000 calls/s closed loop at 256 concurrent",
			fmt.Sprintf("%.0f calls/s at %d (%d errors)", c.REST.PerSec, c.REST.Concurrency, c.REST.Errors),
			c.REST.PerSec >= 10000 && c.REST.Concurrency >= 256 && c.REST.Errors == 0)
	}
	if c := r.Calls; c != nil && c.RESTOpen != nil {
		add("call latency", "p99 ≤ 5 ms at offered 10,000 calls/s",
			fmt.Sprintf("p99 %.2f ms at %.0f/s offered (%.0f/s done)", c.RESTOpen.Latency.P99, c.RESTOpen.OfferedRate, c.RESTOpen.PerSec),
			c.RESTOpen.Latency.P99 <= 5 && c.RESTOpen.OfferedRate >= 10000)
	}
	if r.Talk != nil {
		r.Talk.targets(add)
	}
	if x := r.Ratios; x != nil {
		add("call CPU", "hub CPU per call ≤ 2 × bare round trip (both ends), saturated",
			fmt.Sprintf("%.1f µs ÷ %.1f µs = %.2f× (closed loops)", x.HubCPUUs, x.BareCPUUs, x.CPU), x.CPU <= 2)
		if x.OpenCPU > 0 {
			add("call CPU", fmt.Sprintf("the same at %s/s offered", num(r.Calls.RESTOpen.OfferedRate)),
				fmt.Sprintf("%.1f µs ÷ %.1f µs = %.2f× (open loops)", x.HubOpenCPUUs, x.BareOpenCPUs, x.OpenCPU), x.OpenCPU <= 2)
		}
	}
}

func (r *Report) writeJSON(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// printTable writes the human-readable summary.
func (r *Report) printTable(w io.Writer) {
	m := r.Machine
	fmt.Fprintf(w, "\nxiaozhi-hub benchmark — %s, %d cores, %s, %.0f GiB, load average %.2f → %.2f\n",
		m.CPUModel, m.NumCPU, m.GoVersion, m.MemTotalGB, m.LoadAvgBefore, m.LoadAvgAfter)
	fmt.Fprintf(w, "command: %s\ndevices on: %s\n\n", r.Command, r.Settings.Transport)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	row := func(cells ...string) { fmt.Fprintln(tw, strings.Join(cells, "\t")) }
	row("scenario", "figure", "value")
	row("--------", "------", "-----")
	if b := r.Baseline; b != nil {
		row("baseline", fmt.Sprintf("bare WS, %d conns, %d/%d B", b.Connections, b.RequestBytes, b.ReplyBytes),
			fmt.Sprintf("%s rt/s  p50 %s  p99 %s", num(b.Closed.PerSec), msf(b.Closed.Latency.P50), msf(b.Closed.Latency.P99)))
		row("", "CPU per round trip", fmt.Sprintf("%.1f µs (echo %.1f + client %.1f)", b.cpuPerRoundTrip(), b.Closed.ServerCPUPerCall, b.Closed.ClientCPUPerCall))
		if b.Open != nil {
			row("", fmt.Sprintf("open loop %s/s", num(b.Open.OfferedRate)),
				fmt.Sprintf("%s rt/s  p50 %s  p99 %s", num(b.Open.PerSec), msf(b.Open.Latency.P50), msf(b.Open.Latency.P99)))
		}
	}
	if x := r.Readiness; x != nil {
		row("readiness", fmt.Sprintf("%d devices (%s, %d tools) at once", x.Devices, x.Profile, x.ToolCount),
			fmt.Sprintf("all hellos %.2f s, all tools cached %.2f s = %s devices/s", x.AllConnected, x.AllCached, num(x.DevicesPerSec)))
		row("", "hello → cached (hub)", fmt.Sprintf("p50 %s  p99 %s", msf(x.HelloToCachedP50), msf(x.HelloToCachedP99)))
		row("", "connect → hello (device)", fmt.Sprintf("p50 %s  p99 %s", msf(x.ConnectToHello.P50), msf(x.ConnectToHello.P99)))
		row("", "CPU", fmt.Sprintf("hub %.2f s = %.0f µs per device, devices %.0f µs per device; %d failed dials",
			x.HubCPU, x.HubCPUPerDevice, x.GenCPUPerDevice, x.ConnectFailures))
	}
	if x := r.Idle; x != nil {
		b := x.Baseline
		row("idle", "0 devices", fmt.Sprintf("RSS %s  heap %s  goroutines %d", mib(b.RSS), mib(b.HeapInuse), b.Goroutines))
		for _, s := range x.Steps {
			row("", fmt.Sprintf("%d devices", s.Devices),
				fmt.Sprintf("RSS %s (%.1f KB/dev)  heap %s (%.1f KB/dev)  stacks %.1f KB/dev  goroutines %d (%.2f/dev)",
					mib(s.RSS), s.RSSPerDevice, mib(s.HeapInuse), s.HeapPerDevice, s.StackPerDevice, s.Goroutines, s.GoroutinesPerDev))
		}
	}
	if c := r.Calls; c != nil {
		type named struct {
			name string
			r    *CallRun
		}
		runs := []named{{"REST", c.REST}, {"REST", c.RESTOpen}}
		for _, x := range c.RESTOpenMore {
			runs = append(runs, named{"REST", x})
		}
		runs = append(runs, named{"MCP", c.MCP}, named{"MCP", c.MCPOpen})
		for _, run := range runs {
			if run.r == nil {
				continue
			}
			what := fmt.Sprintf("%s closed, %d concurrent", run.name, run.r.Concurrency)
			if run.r.Mode == "open" {
				what = fmt.Sprintf("%s open, %s/s offered", run.name, num(run.r.OfferedRate))
			}
			row("calls", what, fmt.Sprintf("%s calls/s  p50 %s  p99 %s  p99.9 %s  errors %d",
				num(run.r.PerSec), msf(run.r.Latency.P50), msf(run.r.Latency.P99), msf(run.r.Latency.P999), run.r.Errors))
			row("", "", fmt.Sprintf("hub CPU %.1f µs/call (%.0f allocs, %.1f KB), generator+devices %.1f µs/call; hub's own p50 %s p99 %s",
				run.r.ServerCPUPerCall, run.r.HubAllocs, run.r.HubAllocBytes/1024, run.r.ClientCPUPerCall, msf(run.r.HubP50), msf(run.r.HubP99)))
		}
		if c.MCPNote != "" {
			row("calls", "MCP", c.MCPNote)
		}
	}
	if x := r.Restart; x != nil {
		row("restart", fmt.Sprintf("kill -9 with %d devices", x.Devices),
			fmt.Sprintf("listening %.2f s, API %.2f s, tools served %.2f s (%d cached), first call %.2f s",
				x.Listening, x.APIUp, x.ToolsServed, x.CachedAtAPIUp, x.FirstCall))
		row("", "", fmt.Sprintf("all online %.2f s, all re-listed %.2f s", x.AllOnline, x.AllRelisted))
	}
	if r.Talk != nil {
		r.Talk.rows(row)
	}
	if x := r.Ratios; x != nil {
		row("ratios", "hub ÷ bare WebSocket", fmt.Sprintf("throughput %.2f×  p50 %.1f×  p99 %.1f×  open p99 %.1f×  CPU %.2f× (%.1f ÷ %.1f µs)",
			x.Throughput, x.P50, x.P99, x.OpenP99, x.CPU, x.HubCPUUs, x.BareCPUUs))
		if x.OpenCPU > 0 {
			row("", "", fmt.Sprintf("CPU at the offered rate %.2f× (%.1f ÷ %.1f µs)", x.OpenCPU, x.HubOpenCPUUs, x.BareOpenCPUs))
		}
		if x.MCPCPU > 0 {
			row("", "MCP ÷ bare WebSocket", fmt.Sprintf("CPU %.2f×", x.MCPCPU))
		}
	}
	tw.Flush()
	if len(r.Targets) > 0 {
		fmt.Fprintln(w, "\ntargets:")
		for _, t := range r.Targets {
			mark := "no "
			if t.Reached {
				mark = "yes"
			}
			fmt.Fprintf(w, "  [%s] %-16s %-62s %s\n", mark, t.Name, t.Goal, t.Got)
		}
	}
	for _, n := range r.Notes {
		fmt.Fprintln(w, "note:", n)
	}
}

func num(v float64) string {
	if math.IsNaN(v) {
		return "-"
	}
	s := fmt.Sprintf("%.0f", v)
	// thousands separators
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

func msf(v float64) string {
	switch {
	case math.IsNaN(v) || v == 0:
		return "-"
	case v < 1:
		return fmt.Sprintf("%.0f µs", v*1000)
	case v < 100:
		return fmt.Sprintf("%.2f ms", v)
	default:
		return fmt.Sprintf("%.0f ms", v)
	}
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }
