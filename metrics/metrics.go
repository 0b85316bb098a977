// Package metrics defines the hub's Prometheus metrics. Labels are bounded
// sets (outcomes, kinds, directions); a device id is never a label.
package metrics

import (
	"runtime"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Metrics holds every collector. A nil *Metrics is valid and records nothing,
// so that packages can be used without metrics in tests.
type Metrics struct {
	Registry *prometheus.Registry

	DevicesConnected prometheus.Gauge
	Handshakes       *prometheus.CounterVec   // outcome: ok, timeout, bad_hello, unauthorized, rejected
	Calls            *prometheus.CounterVec   // kind (mcp, iot), outcome (hub.Outcome*)
	CallDuration     *prometheus.HistogramVec // kind
	Discovery        *prometheus.HistogramVec // outcome: time from hello to tools cached
	Bytes            *prometheus.CounterVec   // direction (in, out)
	Messages         *prometheus.CounterVec   // direction, type (hello, mcp, iot, listen, abort, audio, other)
	ProtocolErrors   *prometheus.CounterVec   // reason
	RecordsDropped   prometheus.Counter
	DeviceEvents     *prometheus.CounterVec // action: dropped (over the device's rate), truncated

	CallsByCaller *prometheus.CounterVec   // caller: api, mcp, agent, …
	HTTP          *prometheus.CounterVec   // route (the mux pattern), code
	HTTPDuration  *prometheus.HistogramVec // route
	AgentRuns     *prometheus.CounterVec   // outcome
	AgentDuration prometheus.Histogram
	AgentTokens   *prometheus.CounterVec // direction: input, output
	OTAChecks     *prometheus.CounterVec // outcome: admitted, activation, refused, rate_limited

	voice voiceMetrics
}

// New creates the collectors in a private registry, with Go and process
// collectors included.
func New() *Metrics {
	r := prometheus.NewRegistry()
	r.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m := &Metrics{
		Registry: r,
		DevicesConnected: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "xiaozhi_hub_devices_connected", Help: "Devices with an open connection and a completed hello.",
		}),
		Handshakes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "xiaozhi_hub_handshakes_total", Help: "Device connection attempts by outcome.",
		}, []string{"outcome"}),
		Calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "xiaozhi_hub_calls_total", Help: "Tool calls and IoT commands by kind and outcome.",
		}, []string{"kind", "outcome"}),
		CallDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "xiaozhi_hub_call_duration_seconds",
			Help:    "Time from accepting a call to the device's answer.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300},
		}, []string{"kind"}),
		Discovery: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "xiaozhi_hub_discovery_duration_seconds",
			Help:    "Time from the device's hello to its tool list cached.",
			Buckets: []float64{.00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"outcome"}),
		Bytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "xiaozhi_hub_device_bytes_total", Help: "WebSocket payload bytes to and from devices.",
		}, []string{"direction"}),
		Messages: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "xiaozhi_hub_device_messages_total", Help: "WebSocket messages to and from devices by type.",
		}, []string{"direction", "type"}),
		ProtocolErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "xiaozhi_hub_protocol_errors_total", Help: "Bad input from devices by reason.",
		}, []string{"reason"}),
		RecordsDropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "xiaozhi_hub_records_dropped_total", Help: "Call records and events not persisted because the store fell behind or failed.",
		}),
		DeviceEvents: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "xiaozhi_hub_device_events_limited_total", Help: "Device messages not recorded as events (over the per-device rate) or recorded truncated.",
		}, []string{"action"}),
	}
	m.CallsByCaller = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "xiaozhi_hub_calls_by_caller_total", Help: "Tool calls and IoT commands by who asked: api (REST), mcp (outside agents), agent (the built-in agent).",
	}, []string{"caller"})
	m.HTTP = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "xiaozhi_hub_http_requests_total", Help: "HTTP requests by route pattern and status code (REST, /mcp, OTA, the dashboard).",
	}, []string{"route", "code"})
	m.HTTPDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "xiaozhi_hub_http_request_duration_seconds", Help: "Time to answer an HTTP request, by route pattern (streams and WebSockets are not timed).",
		Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
	}, []string{"route"})
	m.AgentRuns = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "xiaozhi_hub_agent_runs_total", Help: "Runs of the built-in agent by outcome (ok, step_limit, timeout, canceled, llm_error).",
	}, []string{"outcome"})
	m.AgentDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "xiaozhi_hub_agent_run_duration_seconds", Help: "Time of a whole agent run, model and tools.",
		Buckets: []float64{.25, .5, 1, 2, 4, 8, 16, 32, 64, 120},
	})
	m.AgentTokens = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "xiaozhi_hub_agent_tokens_total", Help: "Model tokens used by the built-in agent, by direction (input, output).",
	}, []string{"direction"})
	m.OTAChecks = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "xiaozhi_hub_ota_checks_total", Help: "OTA checks by outcome: admitted (a token, and MQTT when offered), activation (a code for a person to approve), refused (a malformed request), rate_limited.",
	}, []string{"outcome"})
	r.MustRegister(m.DevicesConnected, m.Handshakes, m.Calls, m.CallDuration, m.Discovery,
		m.Bytes, m.Messages, m.ProtocolErrors, m.RecordsDropped, m.DeviceEvents,
		m.CallsByCaller, m.HTTP, m.HTTPDuration, m.AgentRuns, m.AgentDuration, m.AgentTokens, m.OTAChecks)
	m.voice = newVoiceMetrics(r)
	return m
}

// Gauge registers a gauge read from f at each scrape (known devices,
// pending activations, …).
func (m *Metrics) Gauge(name, help string, f func() float64) {
	if m != nil {
		m.Registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f))
	}
}

// CounterFunc registers a counter read from f at each scrape (counts kept
// elsewhere).
func (m *Metrics) CounterFunc(name, help string, f func() float64) {
	if m != nil {
		m.Registry.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, f))
	}
}

// BuildInfo registers xiaozhi_hub_build_info{version,go_version,opus} = 1,
// with the Go version the hub was built with and its Opus implementation
// (gopus, or libopus in a build with -tags libopus).
func (m *Metrics) BuildInfo(version, opus string) {
	goVersion := runtime.Version()
	if m != nil {
		g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "xiaozhi_hub_build_info", Help: "The hub's version, Go version and Opus implementation (value 1).",
			ConstLabels: prometheus.Labels{"version": version, "go_version": goVersion, "opus": opus}})
		g.Set(1)
		m.Registry.MustRegister(g)
	}
}

// CallBy counts one call by who asked.
func (m *Metrics) CallBy(caller string) {
	if m != nil {
		if caller == "" {
			caller = "other"
		}
		m.CallsByCaller.WithLabelValues(caller).Inc()
	}
}

// Request records one HTTP request.
func (m *Metrics) Request(route string, code int, seconds float64, timed bool) {
	if m != nil {
		m.HTTP.WithLabelValues(route, strconv.Itoa(code)).Inc()
		if timed {
			m.HTTPDuration.WithLabelValues(route).Observe(seconds)
		}
	}
}

// AgentRun records one finished agent run.
func (m *Metrics) AgentRun(outcome string, seconds float64, inputTokens, outputTokens int) {
	if m != nil {
		m.AgentRuns.WithLabelValues(outcome).Inc()
		m.AgentDuration.Observe(seconds)
		m.AgentTokens.WithLabelValues("input").Add(float64(inputTokens))
		m.AgentTokens.WithLabelValues("output").Add(float64(outputTokens))
	}
}

// OTACheck counts one OTA check by outcome.
func (m *Metrics) OTACheck(outcome string) {
	if m != nil {
		m.OTAChecks.WithLabelValues(outcome).Inc()
	}
}

// Handshake counts one connection attempt.
func (m *Metrics) Handshake(outcome string) {
	if m != nil {
		m.Handshakes.WithLabelValues(outcome).Inc()
	}
}

// Connected moves the connected-devices gauge by delta.
func (m *Metrics) Connected(delta float64) {
	if m != nil {
		m.DevicesConnected.Add(delta)
	}
}

// Call records one finished call.
func (m *Metrics) Call(kind, outcome string, seconds float64) {
	if m != nil {
		m.Calls.WithLabelValues(kind, outcome).Inc()
		m.CallDuration.WithLabelValues(kind).Observe(seconds)
	}
}

// Discovered records the time from hello to tools cached.
func (m *Metrics) Discovered(outcome string, seconds float64) {
	if m != nil {
		m.Discovery.WithLabelValues(outcome).Observe(seconds)
	}
}

// Message counts one message and its bytes. direction is "in" or "out".
func (m *Metrics) Message(direction, typ string, n int) {
	if m != nil {
		m.Messages.WithLabelValues(direction, typ).Inc()
		m.Bytes.WithLabelValues(direction).Add(float64(n))
	}
}

// ProtocolError counts one bad input from a device.
func (m *Metrics) ProtocolError(reason string) {
	if m != nil {
		m.ProtocolErrors.WithLabelValues(reason).Inc()
	}
}

// Dropped counts n records the store could not keep up with or failed to
// write.
func (m *Metrics) Dropped(n int) {
	if m != nil {
		m.RecordsDropped.Add(float64(n))
	}
}

// DeviceEventLimited counts one device event dropped or truncated.
func (m *Metrics) DeviceEventLimited(action string) {
	if m != nil {
		m.DeviceEvents.WithLabelValues(action).Inc()
	}
}
