// Package metrics defines the hub's Prometheus metrics. Labels are bounded
// sets (outcomes, kinds, directions); a device id is never a label.
package metrics

import (
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
	r.MustRegister(m.DevicesConnected, m.Handshakes, m.Calls, m.CallDuration, m.Discovery,
		m.Bytes, m.Messages, m.ProtocolErrors, m.RecordsDropped, m.DeviceEvents)
	return m
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
