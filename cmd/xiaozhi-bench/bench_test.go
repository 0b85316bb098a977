package main

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"io"
	"math"
	"strings"
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	var d []time.Duration
	for i := 1; i <= 100; i++ {
		d = append(d, time.Duration(i)*time.Millisecond)
	}
	for q, want := range map[float64]time.Duration{0.5: 50 * time.Millisecond, 0.99: 99 * time.Millisecond, 1: 100 * time.Millisecond, 0: time.Millisecond, 0.001: time.Millisecond} {
		if got := percentile(d, q); got != want {
			t.Errorf("percentile(%v) = %v, want %v", q, got, want)
		}
	}
	if percentile(nil, 0.5) != 0 {
		t.Error("empty")
	}
	l := summarize(d)
	if l.Count != 100 || l.P50 != 50 || l.P99 != 99 || l.Max != 100 || math.Abs(l.Mean-50.5) > 1e-9 {
		t.Errorf("summary %+v", l)
	}
}

func TestLogHistogram(t *testing.T) {
	d := []time.Duration{5 * time.Microsecond, 10 * time.Microsecond, 150 * time.Microsecond, time.Millisecond, time.Hour}
	edges, share := logHistogram(d, 10*time.Microsecond, 10*time.Second, 10)
	if len(edges) != 61 || len(share) != 60 {
		t.Fatalf("%d edges, %d bins", len(edges), len(share))
	}
	sum := 0.0
	for _, s := range share {
		sum += s
	}
	if math.Abs(sum-1) > 1e-9 {
		t.Errorf("shares sum to %v", sum)
	}
	if share[0] != 0.4 || share[59] != 0.2 { // 5 µs and 10 µs in the first bin, 1 h in the last
		t.Errorf("first %v, last %v", share[0], share[59])
	}
	if share[20] != 0.2 { // 1 ms is 2 decades above 10 µs: bin 20
		t.Errorf("1 ms bin %v", share[30])
	}
}

func TestSVGIsWellFormed(t *testing.T) {
	var buf bytes.Buffer
	ss := []series{
		{"REST <closed> & open", []time.Duration{time.Millisecond, 2 * time.Millisecond, 40 * time.Millisecond}},
		{"empty", nil},
	}
	if err := writeSVG(&buf, `latency "test" <1>`, ss); err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(&buf)
	elements := map[string]int{}
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok {
			elements[se.Name.Local]++
		}
	}
	if elements["svg"] != 1 || elements["polyline"] != 2 || elements["text"] < 10 {
		t.Errorf("elements %v", elements)
	}
}

func TestParseStatCPU(t *testing.T) {
	// The command name may hold spaces and parentheses.
	line := "1234 (xiaozhi (b) c) S 1 1234 1234 0 -1 4194560 2000 0 0 0 250 75 0 0 20 0 12 0 100 12345678 3000 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0"
	got, err := parseStatCPU([]byte(line))
	if err != nil || got != 3250*time.Millisecond {
		t.Fatalf("got %v %v, want 3.25s", got, err)
	}
	if _, err := parseStatCPU([]byte("1234 (x) S 1")); err == nil {
		t.Error("short line accepted")
	}
}

func TestParseStatusKB(t *testing.T) {
	status := "Name:\txiaozhi-bench\nVmPeak:\t  500000 kB\nVmRSS:\t  123456 kB\nThreads:\t9\n"
	n, err := parseStatusKB([]byte(status), "VmRSS")
	if err != nil || n != 123456*1024 {
		t.Fatalf("%d %v", n, err)
	}
	if _, err := parseStatusKB([]byte(status), "VmSwap"); err == nil {
		t.Error("missing field found")
	}
	if m := parseCPUModel([]byte("processor\t: 0\nmodel name\t: AMD EPYC 7B13\n")); m != "AMD EPYC 7B13" {
		t.Errorf("model %q", m)
	}
}

func TestParseProm(t *testing.T) {
	text := `# HELP go_goroutines Number of goroutines.
# TYPE go_goroutines gauge
go_goroutines 42
xiaozhi_hub_devices_connected 1e+04
xiaozhi_hub_discovery_duration_seconds_bucket{outcome="ok",le="0.001"} 10
xiaozhi_hub_discovery_duration_seconds_bucket{outcome="ok",le="0.01"} 60
xiaozhi_hub_discovery_duration_seconds_bucket{outcome="ok",le="+Inf"} 100
xiaozhi_hub_discovery_duration_seconds_bucket{outcome="error",le="+Inf"} 3
xiaozhi_hub_discovery_duration_seconds_count{outcome="ok"} 100
weird{a="x\"y,z",b="2"} 7 1700000000000
`
	ps, err := parseProm(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	if ps.get("go_goroutines") != 42 || ps.get("xiaozhi_hub_devices_connected") != 10000 || ps.get("weird", "a", `x"y,z`, "b", "2") != 7 {
		t.Errorf("values: %v", ps)
	}
	if !math.IsNaN(ps.get("nothing")) {
		t.Error("missing metric is not NaN")
	}
	h := ps.histogram("xiaozhi_hub_discovery_duration_seconds", "outcome", "ok")
	if len(h) != 3 || !math.IsInf(h[2].le, 1) {
		t.Fatalf("buckets %v", h)
	}
	// 50th of 100: between 0.001 (10) and 0.01 (60): 0.001 + 0.009*40/50.
	if q := bucketQuantile(h, 0.5); math.Abs(q-0.0082) > 1e-9 {
		t.Errorf("p50 %v", q)
	}
	if q := bucketQuantile(h, 0.99); q != 0.01 { // past the last finite bound
		t.Errorf("p99 %v", q)
	}
	d := subtract(h, []bucket{{0.001, 5}, {0.01, 5}, {math.Inf(1), 5}})
	if d[0].count != 5 || d[2].count != 95 {
		t.Errorf("subtract %v", d)
	}
	if !math.IsNaN(bucketQuantile(nil, 0.5)) {
		t.Error("empty histogram")
	}
}

func TestReportTargetsAndJSON(t *testing.T) {
	r := &Report{
		Baseline:  &BaselineResult{Closed: &CallRun{PerSec: 50000, ServerCPUPerCall: 15, ClientCPUPerCall: 15, Latency: Latency{P50: 1, P99: 4}}, Open: &CallRun{ServerCPUPerCall: 30, ClientCPUPerCall: 30, Latency: Latency{P99: 2}}},
		Readiness: &ReadinessResult{Devices: 10000, AllCached: 2.5},
		Idle:      &IdleResult{Steps: []IdleStep{{Devices: 10000, RSSPerDevice: 19}, {Devices: 15000}}},
		Calls:     &CallsResult{REST: &CallRun{PerSec: 12000, Concurrency: 256, ServerCPUPerCall: 75, Latency: Latency{P50: 3, P99: 8}}, RESTOpen: &CallRun{OfferedRate: 10000, ServerCPUPerCall: 90, Latency: Latency{P99: 6}}},
	}
	r.computeRatios()
	r.computeTargets()
	want := map[string]bool{"readiness": true, "idle memory": true, "idle hold": true, "call throughput": true, "call latency": false,
		"call CPU/closed": false, "call CPU/open": true}
	for _, tg := range r.Targets {
		name := tg.Name
		if name == "call CPU" {
			name += "/closed"
			if strings.Contains(tg.Got, "open") {
				name = "call CPU/open"
			}
		}
		if w, ok := want[name]; !ok || w != tg.Reached {
			t.Errorf("target %s reached=%v", name, tg.Reached)
		}
		delete(want, name)
	}
	if len(want) != 0 {
		t.Errorf("targets missing: %v", want)
	}
	if r.Ratios.CPU != 2.5 || r.Ratios.Throughput != 0.24 || r.Ratios.OpenCPU != 1.5 {
		t.Errorf("ratios %+v", r.Ratios)
	}
	var buf bytes.Buffer
	r.printTable(&buf)
	if !strings.Contains(buf.String(), "[yes] readiness") {
		t.Errorf("table:\n%s", buf.String())
	}
	b, err := json.Marshal(r)
	if err != nil || !json.Valid(b) {
		t.Fatal(err)
	}
}

func TestScheduleKeepsTheRate(t *testing.T) {
	var at []time.Time
	start := time.Now()
	schedule(t.Context(), start, 1000, 50*time.Millisecond, func(a time.Time) { at = append(at, a) })
	if len(at) != 50 {
		t.Fatalf("%d requests, want 50", len(at))
	}
	for i, a := range at { // scheduled times, not send times
		if want := start.Add(time.Duration(i) * time.Millisecond); !a.Equal(want) {
			t.Fatalf("request %d scheduled at %v, want %v", i, a.Sub(start), want.Sub(start))
		}
	}
}

func TestBaselineMessagesMatchTheCallPath(t *testing.T) {
	var env struct {
		SessionID string          `json:"session_id"`
		Type      string          `json:"type"`
		Payload   json.RawMessage `json:"payload"`
	}
	for _, m := range [][]byte{baselineRequest(), baselineReply()} {
		if err := json.Unmarshal(m, &env); err != nil || env.Type != "mcp" || len(env.SessionID) != 32 {
			t.Errorf("%s: %+v %v", m, env, err)
		}
	}
	if !bytes.Contains(baselineRequest(), []byte(`"method":"tools/call"`)) || !bytes.Contains(baselineReply(), []byte(`"isError":false`)) {
		t.Error("not a tools/call and its result")
	}
}

func TestDurLabel(t *testing.T) {
	for d, want := range map[time.Duration]string{
		10 * time.Microsecond: "10µs", 580570 * time.Nanosecond: "581µs", 2120 * time.Microsecond: "2.12ms",
		16080 * time.Microsecond: "16.1ms", time.Second: "1s", 9577 * time.Millisecond: "9.58s", 999600 * time.Microsecond: "1000ms",
	} {
		if got := durLabel(d); got != want {
			t.Errorf("%v: %s, want %s", d, got, want)
		}
	}
}
